import { cachedSchema, Completion, completions, findTable, SchemaSource, tablesInFrom } from './completion';
import { completionProvider } from './completionProvider';
import { ColumnInfo, TableInfo } from './types';

const tables: TableInfo[] = [
  { catalog: 'main', schema: 'metrics', name: 'cpu' },
  { catalog: 'main', schema: 'metrics', name: 'mem' },
  { catalog: 'main', schema: 'logs', name: 'cpu' },
];
const columnsOf: Record<string, ColumnInfo[]> = {
  'metrics.cpu': [
    { name: 'time', type: 'timestamp[ns]' },
    { name: 'usage', type: 'float64' },
  ],
  'metrics.mem': [
    { name: 'time', type: 'timestamp[ns]' },
    { name: 'rss', type: 'int64' },
  ],
  'logs.cpu': [{ name: 'line', type: 'utf8' }],
};

function schema(): SchemaSource & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    getTables: async () => {
      calls.push('tables');
      return tables;
    },
    getColumns: async (t) => {
      calls.push(`columns ${t.schema}.${t.name}`);
      return columnsOf[`${t.schema}.${t.name}`] ?? [];
    },
  };
}

const labelsOf = (items: Completion[], kind: Completion['kind']) =>
  items.filter((c) => c.kind === kind).map((c) => c.label);

describe('tablesInFrom and findTable', () => {
  it('reads plain, qualified and quoted names after FROM and JOIN', () => {
    expect(tablesInFrom('SELECT * FROM cpu')).toEqual([['cpu']]);
    expect(tablesInFrom('select * from metrics.cpu c join "logs"."cpu" ON 1=1')).toEqual([
      ['metrics', 'cpu'],
      ['logs', 'cpu'],
    ]);
    expect(tablesInFrom('SELECT * FROM "main"."metrics"."we""ird"')).toEqual([['main', 'metrics', 'we"ird']]);
    expect(tablesInFrom('SELECT 1')).toEqual([]);
  });
  it('matches the last part to the table and earlier parts to schema and catalog', () => {
    expect(findTable(['cpu'], tables)).toBe(tables[0]);
    expect(findTable(['logs', 'cpu'], tables)).toBe(tables[2]);
    expect(findTable(['MAIN', 'Metrics', 'MEM'], tables)).toBe(tables[1]);
    expect(findTable(['nope'], tables)).toBeUndefined();
  });
});

describe('completions', () => {
  it('offers the columns of the tables in FROM, then macros, keywords and tables', async () => {
    const sql = 'SELECT  FROM metrics.cpu JOIN mem ON true';
    const items = await completions(sql, 'SELECT '.length, schema());
    expect(labelsOf(items, 'column')).toEqual(['time', 'usage', 'rss']);
    expect(items.find((c) => c.label === 'usage')?.detail).toBe('float64 · cpu');
    expect(labelsOf(items, 'macro')).toContain('$__timeFilter(col)');
    expect(labelsOf(items, 'keyword')).toContain('GROUP BY');
    expect(labelsOf(items, 'table')).toEqual(['main.metrics.cpu', 'main.metrics.mem', 'main.logs.cpu']);
    expect(items[0].kind).toBe('column');
  });

  it('offers only tables right after FROM and only macros after $', async () => {
    const fromItems = await completions('SELECT * FROM me', 'SELECT * FROM me'.length, schema());
    expect(new Set(fromItems.map((c) => c.kind))).toEqual(new Set(['table']));
    const macroItems = await completions(
      'SELECT * FROM cpu WHERE $__ti',
      'SELECT * FROM cpu WHERE $__ti'.length,
      schema()
    );
    expect(new Set(macroItems.map((c) => c.kind))).toEqual(new Set(['macro']));
    expect(macroItems.find((c) => c.label === '$__timeFilter(col)')?.insertText).toBe('$__timeFilter()');
  });

  it('offers no columns without a known table, and asks for each table once', async () => {
    const s = schema();
    const cached = cachedSchema(s);
    expect(labelsOf(await completions('SELECT ', 7, cached), 'column')).toEqual([]);
    expect(labelsOf(await completions('SELECT  FROM nope', 7, cached), 'column')).toEqual([]);
    await completions('SELECT  FROM cpu', 7, cached);
    await completions('SELECT  FROM cpu WHERE ', 7, cached);
    expect(s.calls).toEqual(['tables', 'columns metrics.cpu']);
  });
});

describe('completionProvider', () => {
  const monaco = {
    languages: { CompletionItemKind: { Class: 5, Field: 3, Function: 1, Keyword: 17 } },
  } as never;

  function model(text: string, id = 'own') {
    return {
      id,
      getValue: () => text,
      getOffsetAt: (p: { column: number }) => p.column - 1,
      getLineContent: () => text,
      getWordUntilPosition: (p: { column: number }) => {
        const before = text.slice(0, p.column - 1);
        const word = /\w*$/.exec(before)![0];
        return { word, startColumn: p.column - word.length, endColumn: p.column };
      },
    };
  }

  it('answers its own model with Monaco items replacing the typed word', async () => {
    const provider = completionProvider(monaco, schema(), (m) => m.id === 'own');
    const text = 'SELECT us FROM cpu';
    const res = (await provider.provideCompletionItems(
      model(text) as never,
      { lineNumber: 1, column: 10 } as never,
      {} as never,
      {} as never
    )) as { suggestions: Array<{ label: string; kind: number; range: { startColumn: number; endColumn: number } }> };
    const usage = res.suggestions.find((s) => s.label === 'usage')!;
    expect(usage.kind).toBe(3);
    expect(usage.range).toMatchObject({ startColumn: 8, endColumn: 10 });
    expect(res.suggestions.find((s) => s.label === 'SELECT')?.kind).toBe(17);
    expect(provider.triggerCharacters).toEqual(expect.arrayContaining([' ', '.', '$']));
  });

  it('replaces the $ of a macro and ignores other editors', async () => {
    const provider = completionProvider(monaco, schema(), (m) => m.id === 'own');
    const text = 'WHERE $__ti';
    const res = (await provider.provideCompletionItems(
      model(text) as never,
      { lineNumber: 1, column: text.length + 1 } as never,
      {} as never,
      {} as never
    )) as { suggestions: Array<{ label: string; kind: number; range: { startColumn: number } }> };
    expect(res.suggestions.every((s) => s.kind === 1)).toBe(true);
    expect(res.suggestions[0].range.startColumn).toBe(7);
    const other = await provider.provideCompletionItems(
      model(text, 'other') as never,
      { lineNumber: 1, column: 5 } as never,
      {} as never,
      {} as never
    );
    expect(other).toEqual({ suggestions: [] });
  });
});
