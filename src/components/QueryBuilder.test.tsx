import React, { useState } from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../datasource';
import { selectors } from '../selectors';
import { instanceSettings } from '../testutil';
import { BuilderModel, QuiverQuery } from '../types';
import { pick as pickOption } from './pickers.testutil';
import { QueryEditor } from './QueryEditor';

jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return {
    ...actual,
    CodeEditor: ({ value, onBlur }: { value: string; onBlur: (v: string) => void }) => (
      <textarea aria-label="sql" defaultValue={value} onBlur={(e) => onBlur(e.currentTarget.value)} />
    ),
  };
});

const columns = [
  { name: 'time', type: 'timestamp[ns]' },
  { name: 'host', type: 'utf8' },
  { name: 'usage', type: 'float64' },
];

let last: QuiverQuery;
const runs = jest.fn();

async function setup(initial: QuiverQuery, identifierQuote?: string) {
  const datasource = new DataSource(instanceSettings({ upstream: 'flightsql' }));
  jest.spyOn(datasource, 'getResource').mockImplementation(async (path: string) => {
    if (path === 'dialect') {
      if (!identifierQuote) {
        throw new Error('404');
      }
      return { dialect: 'mysql', setting: 'mysql', identifierQuote };
    }
    return path === 'tables' ? { tables: [{ catalog: 'main', schema: 'metrics', name: 'cpu' }] } : { columns };
  });
  last = initial;
  function Parent() {
    const [query, setQuery] = useState(initial);
    return (
      <QueryEditor
        datasource={datasource}
        query={query}
        onChange={(q) => {
          last = q;
          setQuery(q);
        }}
        onRunQuery={runs}
      />
    );
  }
  await act(async () => {
    render(<Parent />);
  });
}

async function pick(testId: string, option: string) {
  await screen.findByTestId(testId);
  await pickOption(testId, option);
}

const preview = () => screen.getByTestId(selectors.builder.preview).textContent;
const mode = (name: string) =>
  act(async () => {
    fireEvent.click(within(screen.getByTestId(selectors.builder.mode)).getByLabelText(name));
  });

describe('QueryBuilder', () => {
  beforeEach(() => runs.mockReset());

  it('opens a model saved without its lists', async () => {
    const builder = { table: { catalog: 'main', schema: 'metrics', name: 'cpu' } } as unknown as BuilderModel;
    await setup({ refId: 'A', editorMode: 'builder', format: 'time_series', builder });
    await pick(selectors.builder.timeColumn, 'time');
    expect(preview()).toBe('SELECT "time"\nFROM "main"."metrics"."cpu"\nWHERE $__timeFilter("time")');
  });

  it('writes the SQL for a table, time column, aggregated value, bucket, label, filter, order and limit', async () => {
    await setup({ refId: 'A', editorMode: 'builder', format: 'time_series' });
    await pick(selectors.builder.table, 'main.metrics.cpu');
    expect(preview()).toBe('');
    await pick(selectors.builder.timeColumn, 'time');
    expect(preview()).toBe('SELECT "time"\nFROM "main"."metrics"."cpu"\nWHERE $__timeFilter("time")');
    expect(runs).toHaveBeenCalledTimes(1);

    await act(async () => {
      fireEvent.click(screen.getByTestId(selectors.builder.addValue));
    });
    await pick(selectors.builder.value(0), 'usage');
    await pick(selectors.builder.aggregation(0), 'avg');
    await pick(selectors.builder.bucket, 'Panel interval ($__interval)');
    await pick(selectors.builder.groupBy, 'host');
    await act(async () => {
      fireEvent.click(screen.getByTestId(selectors.builder.addFilter));
    });
    await pick(selectors.builder.filterColumn(0), 'host');
    await pick(selectors.builder.filterOperator(0), 'IN');
    await act(async () => {
      const value = screen.getByTestId(selectors.builder.filterValue(0));
      fireEvent.change(value, { target: { value: '$host' } });
      fireEvent.blur(value);
    });
    await pick(selectors.builder.orderBy, 'host');
    await act(async () => {
      fireEvent.change(screen.getByTestId(selectors.builder.limit), { target: { value: '500' } });
    });
    const sql = [
      'SELECT $__timeGroup("time", $__interval) AS "time", "host", avg("usage") AS "usage"',
      'FROM "main"."metrics"."cpu"',
      'WHERE $__timeFilter("time") AND "host" IN (${host:sqlstring})',
      'GROUP BY $__timeGroup("time", $__interval), "host"',
      'ORDER BY "host" ASC',
      'LIMIT 500',
    ].join('\n');
    expect(preview()).toBe(sql);
    expect(last.rawSql).toBe(sql);
    expect(last.editorMode).toBe('builder');
    expect(last.builder).toEqual({
      table: { catalog: 'main', schema: 'metrics', name: 'cpu' },
      timeColumn: 'time',
      timeBucket: '$__interval',
      values: [{ column: 'usage', aggregation: 'avg' }],
      groupBy: ['host'],
      filters: [{ column: 'host', operator: 'IN', value: '$host' }],
      orderBy: 'host',
      limit: 500,
    });

    // removing the value and the filter takes them out of the SQL
    await act(async () => {
      fireEvent.click(screen.getByTestId(selectors.builder.removeValue(0)));
    });
    await act(async () => {
      fireEvent.click(screen.getByTestId(selectors.builder.removeFilter(0)));
    });
    expect(last.rawSql).toBe(
      'SELECT $__timeGroup("time", $__interval) AS "time", "host"\nFROM "main"."metrics"."cpu"\nWHERE $__timeFilter("time")\nORDER BY "host" ASC\nLIMIT 500'
    );
  });

  it('keeps the SQL when switching to code and back, and warns when the SQL was edited', async () => {
    const builder = {
      table: { name: 'cpu' },
      timeColumn: 'time',
      values: [{ column: 'usage', aggregation: 'max' as const }],
      groupBy: [],
      filters: [],
    };
    const built = 'SELECT "time", max("usage") AS "usage"\nFROM "cpu"\nWHERE $__timeFilter("time")\nGROUP BY "time"';
    await setup({ refId: 'A', editorMode: 'builder', builder, rawSql: built });
    expect(preview()).toBe(built);

    await mode('Code');
    expect(last).toMatchObject({ editorMode: 'code', rawSql: built, builder });
    const sql = screen.getByLabelText('sql');
    expect(sql).toHaveValue(built);

    // unchanged SQL: back to the builder without a question
    await mode('Builder');
    expect(screen.queryByText('Switch to the builder?')).not.toBeInTheDocument();
    expect(last.editorMode).toBe('builder');

    await mode('Code');
    const edited = `${built} HAVING max("usage") > 1`;
    await act(async () => {
      const box = screen.getByLabelText('sql');
      fireEvent.change(box, { target: { value: edited } });
      fireEvent.blur(box);
    });
    expect(last).toMatchObject({ editorMode: 'code', rawSql: edited });

    await mode('Builder');
    expect(await screen.findByText('Switch to the builder?')).toBeInTheDocument();
    await act(async () => {
      fireEvent.click(screen.getByText('Cancel'));
    });
    expect(last).toMatchObject({ editorMode: 'code', rawSql: edited });

    await mode('Builder');
    await act(async () => {
      fireEvent.click(await screen.findByText('Discard the SQL and switch'));
    });
    expect(last).toMatchObject({ editorMode: 'builder', rawSql: built, builder });
  });

  it("quotes identifiers in the backend's dialect", async () => {
    await setup({ refId: 'A', editorMode: 'builder' }, '`');
    await pick(selectors.builder.table, 'main.metrics.cpu');
    await pick(selectors.builder.groupBy, 'host');
    expect(preview()).toBe('SELECT `host`\nFROM `main`.`metrics`.`cpu`');
    expect(last.rawSql).toBe('SELECT `host`\nFROM `main`.`metrics`.`cpu`');
  });

  it('rewrites a builder query saved with ANSI quotes in the dialect once it is known', async () => {
    const builder = { table: { name: 'cpu' }, values: [], groupBy: ['host'], filters: [] };
    await setup({ refId: 'A', editorMode: 'builder', builder, rawSql: 'SELECT "host"\nFROM "cpu"' }, '`');
    expect(last.rawSql).toBe('SELECT `host`\nFROM `cpu`');
    expect(preview()).toBe('SELECT `host`\nFROM `cpu`');
  });

  it('asks before the builder replaces SQL written without it', async () => {
    await setup({ refId: 'A', rawSql: 'SELECT 1' });
    expect(screen.getByLabelText('sql')).toHaveValue('SELECT 1');
    await mode('Builder');
    await act(async () => {
      fireEvent.click(await screen.findByText('Discard the SQL and switch'));
    });
    expect(last).toMatchObject({
      editorMode: 'builder',
      rawSql: '',
      builder: { values: [], groupBy: [], filters: [] },
    });
    expect(screen.getByTestId(selectors.builder.root)).toBeInTheDocument();
  });
});
