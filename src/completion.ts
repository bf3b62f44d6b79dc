import { labels } from './labels';
import { ColumnInfo, TableInfo } from './types';

/** What a completion item is; the editor maps it to Monaco's CompletionItemKind. */
export type CompletionKind = 'table' | 'column' | 'macro' | 'keyword';

/** One completion the SQL editor offers. */
export interface Completion {
  label: string;
  kind: CompletionKind;
  detail: string;
  insertText: string;
}

/** Where the schema comes from: the backend resources GET tables and GET columns. */
export interface SchemaSource {
  getTables(): Promise<TableInfo[]>;
  getColumns(table: TableInfo): Promise<ColumnInfo[]>;
}

/** SQL keywords offered everywhere but right after FROM / JOIN. */
export const keywords = [
  'SELECT',
  'FROM',
  'WHERE',
  'AND',
  'OR',
  'NOT',
  'IN',
  'LIKE',
  'IS NULL',
  'IS NOT NULL',
  'GROUP BY',
  'ORDER BY',
  'ASC',
  'DESC',
  'LIMIT',
  'AS',
  'DISTINCT',
  'JOIN',
  'LEFT JOIN',
  'ON',
  'HAVING',
  'CASE',
  'WHEN',
  'THEN',
  'ELSE',
  'END',
  'COUNT',
  'AVG',
  'SUM',
  'MIN',
  'MAX',
];

const ident = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)`;
const tableAfterFrom = new RegExp(String.raw`\b(?:FROM|JOIN)\s+(${ident}(?:\s*\.\s*${ident}){0,2})`, 'gi');
const unquote = (p: string) => (p.startsWith('"') ? p.slice(1, -1).replace(/""/g, '"') : p);

/** The tables named after FROM and JOIN in sql, as their dotted parts (quotes removed). */
export function tablesInFrom(sql: string): string[][] {
  const out: string[][] = [];
  for (const m of sql.matchAll(tableAfterFrom)) {
    const parts = m[1].match(new RegExp(ident, 'g')) ?? [];
    out.push(parts.map(unquote));
  }
  return out;
}

/** The listed table a dotted name refers to: the last part is the table, earlier ones schema and catalog. */
export function findTable(parts: string[], tables: TableInfo[]): TableInfo | undefined {
  const [name, schema, catalog] = [...parts].reverse();
  const eq = (a: string | undefined, b: string | undefined) =>
    a === undefined || a.toLowerCase() === (b ?? '').toLowerCase();
  return tables.find((t) => eq(name, t.name) && eq(schema, t.schema) && eq(catalog, t.catalog));
}

const tableLabel = (t: TableInfo) => [t.catalog, t.schema, t.name].filter(Boolean).join('.');

/**
 * Completions at offset in sql. Right after FROM or JOIN: the tables. After `$`: the macros.
 * Elsewhere: the columns of the tables in the FROM and JOIN clauses (fetched once per table by the
 * caller's SchemaSource), the macros, the keywords and the tables.
 */
export async function completions(sql: string, offset: number, schema: SchemaSource): Promise<Completion[]> {
  const before = sql.slice(0, offset);
  const tables = await schema.getTables();
  const tableItems: Completion[] = tables.map((t) => ({
    label: tableLabel(t),
    kind: 'table',
    detail: labels.query.table,
    insertText: tableLabel(t),
  }));
  if (/\b(?:FROM|JOIN)\s+[\w."]*$/i.test(before)) {
    return tableItems;
  }
  const macroItems: Completion[] = labels.query.macroHelp.map(([macro, detail]) => ({
    label: macro,
    kind: 'macro',
    detail,
    insertText: macro.replace(/\(.*\)$/, '()'),
  }));
  if (/\$[\w]*$/.test(before)) {
    return macroItems;
  }
  const columnItems: Completion[] = [];
  const seen = new Set<string>();
  for (const parts of tablesInFrom(sql)) {
    const t = findTable(parts, tables);
    if (!t) {
      continue;
    }
    for (const c of await schema.getColumns(t)) {
      if (!seen.has(c.name)) {
        seen.add(c.name);
        columnItems.push({ label: c.name, kind: 'column', detail: `${c.type} · ${t.name}`, insertText: c.name });
      }
    }
  }
  const keywordItems: Completion[] = keywords.map((k) => ({ label: k, kind: 'keyword', detail: '', insertText: k }));
  return [...columnItems, ...macroItems, ...keywordItems, ...tableItems];
}

/**
 * A SchemaSource that asks the data source once per table (and once for the table list) for as
 * long as the editor lives.
 */
export function cachedSchema(source: SchemaSource): SchemaSource {
  let tables: Promise<TableInfo[]> | undefined;
  const columns = new Map<string, Promise<ColumnInfo[]>>();
  return {
    getTables: () => (tables ??= source.getTables()),
    getColumns: (t) => {
      const key = JSON.stringify([t.catalog, t.schema, t.name]);
      let c = columns.get(key);
      if (!c) {
        c = source.getColumns(t);
        columns.set(key, c);
      }
      return c;
    },
  };
}
