import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../datasource';
import { selectors } from '../selectors';
import { instanceSettings } from '../testutil';
import { QuiverOptions, QuiverQuery } from '../types';
import { pick } from './pickers.testutil';
import { QueryEditor } from './QueryEditor';

// Monaco does not run in jsdom: stand in a textarea that reports blur like CodeEditor does.
jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return {
    ...actual,
    CodeEditor: ({ value, onBlur, language }: { value: string; language: string; onBlur: (v: string) => void }) => (
      <textarea
        aria-label="sql"
        data-language={language}
        defaultValue={value}
        onBlur={(e) => onBlur(e.currentTarget.value)}
      />
    ),
  };
});

async function setup(query: QuiverQuery, jsonData: QuiverOptions = {}, resources?: (path: string) => Promise<unknown>) {
  const datasource = new DataSource(instanceSettings(jsonData));
  const getResource = jest
    .spyOn(datasource, 'getResource')
    .mockImplementation(resources ?? (() => Promise.reject(new Error('not found'))));
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  await act(async () => {
    render(<QueryEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  });
  return { onChange, onRunQuery, getResource };
}

describe('QueryEditor, demo upstream', () => {
  it('changes the scenario and runs the query', async () => {
    const { onChange, onRunQuery } = await setup({ refId: 'A', scenario: 'random_walk', seriesCount: 10 });
    expect(within(screen.getByTestId(selectors.query.scenario)).getByLabelText('Random walk')).toBeChecked();
    fireEvent.click(within(screen.getByTestId(selectors.query.scenario)).getByLabelText('Logs'));
    expect(onChange).toHaveBeenCalledWith({ refId: 'A', scenario: 'logs', seriesCount: 10 });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('changes the series count and seed', async () => {
    const { onChange } = await setup({ refId: 'A', scenario: 'random_walk', seriesCount: 10 });
    fireEvent.change(screen.getByTestId(selectors.query.seriesCount), { target: { value: '50' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', scenario: 'random_walk', seriesCount: 50 });
    fireEvent.change(screen.getByTestId(selectors.query.seed), { target: { value: '7' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', scenario: 'random_walk', seriesCount: 10, seed: 7 });
  });

  it('flags a series count beyond the data source limit and does not run it', async () => {
    const { onRunQuery } = await setup({ refId: 'A', scenario: 'random_walk', seriesCount: 200 }, { maxSeries: 100 });
    expect(screen.getByText('Series must be a whole number from 1 to 100.')).toBeInTheDocument();
    fireEvent.click(within(screen.getByTestId(selectors.query.scenario)).getByLabelText('Table'));
    expect(onRunQuery).not.toHaveBeenCalled();
  });
});

describe('QueryEditor, Flight SQL upstream', () => {
  it('sends rawSql on blur and the chosen format', async () => {
    const { onChange, onRunQuery } = await setup(
      { refId: 'A', rawSql: '', format: 'time_series' },
      { upstream: 'flightsql' }
    );
    const sql = screen.getByLabelText('sql');
    expect(sql).toHaveAttribute('data-language', 'sql');
    fireEvent.change(sql, { target: { value: 'SELECT time, v FROM t WHERE $__timeFilter(time)' } });
    fireEvent.blur(sql);
    expect(onChange).toHaveBeenLastCalledWith({
      refId: 'A',
      rawSql: 'SELECT time, v FROM t WHERE $__timeFilter(time)',
      format: 'time_series',
      editorMode: 'code',
    });
    expect(onRunQuery).toHaveBeenCalledTimes(1);

    fireEvent.click(within(screen.getByTestId(selectors.query.format)).getByLabelText('Logs'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', rawSql: '', format: 'logs' });
    fireEvent.click(within(screen.getByTestId(selectors.query.format)).getByLabelText('Time series (wide)'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', rawSql: '', format: 'time_series_wide' });
    // the table hints are absent when the backend does not list tables
    expect(screen.queryByTestId(selectors.query.table)).not.toBeInTheDocument();
  });

  it('opens a builder query saved by hand whose filter lacks a value and whose lists are missing', async () => {
    const builder = { table: { name: 'cpu' }, values: [{ column: 'usage' }], filters: [{ column: 'host' }] };
    const rawSql = 'SELECT "usage"\nFROM "cpu"';
    await setup({ refId: 'A', editorMode: 'builder', rawSql, builder } as unknown as QuiverQuery, {
      upstream: 'flightsql',
    });
    expect(screen.getByTestId(selectors.builder.preview)).toHaveTextContent(rawSql.replace('\n', ' '));
    expect(screen.getByTestId(selectors.builder.filterValue(0))).toHaveValue('');
  });

  it('lists the macros', async () => {
    await setup({ refId: 'A' }, { upstream: 'flightsql' });
    const help = screen.getByTestId(selectors.query.macros);
    for (const macro of [
      '$__timeFilter(col)',
      '$__timeFrom',
      '$__timeTo',
      '$__interval',
      '$__interval_ms',
      '$__timeGroup(col, interval)',
    ]) {
      expect(within(help).getByText(macro)).toBeInTheDocument();
    }
  });

  it('offers tables and their columns from the resource endpoints', async () => {
    const { getResource, onChange } = await setup(
      { refId: 'A', rawSql: 'SELECT' },
      { upstream: 'flightsql' },
      async (path) =>
        path === 'tables'
          ? { tables: [{ catalog: 'main', schema: 'public', name: 'cpu' }] }
          : {
              columns: [
                { name: 'time', type: 'timestamp' },
                { name: 'usage', type: 'double' },
              ],
            }
    );
    await screen.findByTestId(selectors.query.table);
    await pick(selectors.query.table, 'main.public.cpu');
    const columns = await screen.findByTestId(selectors.query.columns);
    await within(columns).findByText('usage');
    expect(getResource).toHaveBeenCalledWith('columns', { table: 'cpu', schema: 'public', catalog: 'main' });
    expect(within(columns).getByText('timestamp')).toBeInTheDocument();
    // without a mounted Monaco editor, a click appends the name to the SQL
    fireEvent.click(within(columns).getByText('usage'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', rawSql: 'SELECT usage' });
  });
});
