import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../../datasource';
import { selectors } from '../../selectors';
import { instanceSettings } from '../../testutil';
import { DialectInfo, QuiverQuery } from '../../types';
import { SQLEditor } from './SQLEditor';

jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return {
    ...actual,
    CodeEditor: ({ value }: { value: string }) => <textarea aria-label="sql" defaultValue={value} />,
  };
});

const backtick: DialectInfo = { dialect: 'mysql', setting: 'mysql', identifierQuote: '`' };
const builder = { table: { name: 'cpu' }, values: [], groupBy: ['host'], filters: [] };

function setup(query: QuiverQuery, dialect: Promise<DialectInfo> = Promise.resolve(backtick)) {
  const datasource = new DataSource(instanceSettings({ upstream: 'flightsql' }));
  jest.spyOn(datasource, 'getDialect').mockReturnValue(dialect);
  jest.spyOn(datasource, 'getResource').mockRejectedValue(new Error('404'));
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  const view = render(<SQLEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  return { onChange, onRunQuery, view };
}

test('code mode by default, the builder in builder mode', async () => {
  setup({ refId: 'A', rawSql: 'SELECT 1' });
  expect(await screen.findByLabelText('sql')).toBeInTheDocument();
  expect(screen.queryByTestId(selectors.builder.root)).not.toBeInTheDocument();
  expect(within(screen.getByTestId(selectors.query.format)).getByLabelText('Time series')).toBeChecked();
  await act(async () => {});

  setup({ refId: 'B', editorMode: 'builder', builder, rawSql: 'SELECT `host`\nFROM `cpu`' });
  expect(await screen.findByTestId(selectors.builder.root)).toBeInTheDocument();
});

test('a new format changes and runs the query', async () => {
  const { onChange, onRunQuery } = setup({ refId: 'A', rawSql: 'SELECT 1', format: 'time_series' });
  await act(async () => {});
  fireEvent.click(within(screen.getByTestId(selectors.query.format)).getByLabelText('Table'));
  expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', rawSql: 'SELECT 1', format: 'table' });
  expect(onRunQuery).toHaveBeenCalledTimes(1);
});

test("Incremental is on by default for the time-series and logs formats, turns the query's incremental off, and is not offered for tables", async () => {
  const { onChange, onRunQuery, view } = setup({ refId: 'A', rawSql: 'SELECT 1', format: 'time_series' });
  await act(async () => {});
  const toggle = screen.getByTestId(selectors.query.incremental);
  expect(toggle).toBeChecked();
  fireEvent.click(toggle);
  expect(onChange).toHaveBeenLastCalledWith({
    refId: 'A',
    rawSql: 'SELECT 1',
    format: 'time_series',
    incremental: false,
  });
  expect(onRunQuery).toHaveBeenCalledTimes(1);
  view.unmount();

  const logs = setup({ refId: 'A', rawSql: 'SELECT 1', format: 'logs' });
  await act(async () => {});
  expect(screen.getByTestId(selectors.query.incremental)).toBeChecked();
  logs.view.unmount();

  setup({ refId: 'A', rawSql: 'SELECT 1', format: 'table' });
  await act(async () => {});
  expect(screen.queryByTestId(selectors.query.incremental)).not.toBeInTheDocument();
});

test('the dialect rewrites builder SQL only: code is left alone', async () => {
  const ansi = 'SELECT "host"\nFROM "cpu"';
  const code = setup({ refId: 'A', editorMode: 'code', builder, rawSql: ansi });
  await act(async () => {});
  expect(code.onChange).not.toHaveBeenCalled();
  code.view.unmount();

  const built = setup({ refId: 'A', editorMode: 'builder', builder, rawSql: ansi });
  await act(async () => {});
  expect(built.onChange).toHaveBeenCalledWith({
    refId: 'A',
    editorMode: 'builder',
    builder,
    rawSql: 'SELECT `host`\nFROM `cpu`',
  });
});

test('an editor gone before the dialect answers changes nothing', async () => {
  let answer: (d: DialectInfo) => void = () => {};
  const dialect = new Promise<DialectInfo>((resolve) => (answer = resolve));
  const { onChange, view } = setup(
    { refId: 'A', editorMode: 'builder', builder, rawSql: 'SELECT "host"\nFROM "cpu"' },
    dialect
  );
  view.unmount();
  await act(async () => answer(backtick));
  expect(onChange).not.toHaveBeenCalled();
});
