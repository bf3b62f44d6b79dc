import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../../datasource';
import { selectors } from '../../selectors';
import { instanceSettings } from '../../testutil';
import { QuiverQuery } from '../../types';
import { pick } from '../pickers.testutil';
import { CodeMode, tableName } from './CodeMode';

const editor = { focus: jest.fn(), trigger: jest.fn(), getModel: () => ({ id: 'model-1' }) };
const dispose = jest.fn();
const monaco = {
  languages: {
    CompletionItemKind: { Class: 5, Field: 3, Function: 1, Keyword: 17 },
    registerCompletionItemProvider: jest.fn(() => ({ dispose })),
  },
};

// Monaco does not run in jsdom: a textarea that reports blur like CodeEditor and mounts a stand-in editor.
jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  const { useEffect } = jest.requireActual('react');
  return {
    ...actual,
    CodeEditor: ({
      value,
      onBlur,
      onEditorDidMount,
    }: {
      value: string;
      onBlur: (v: string) => void;
      onEditorDidMount?: (e: unknown, m: unknown) => void;
    }) => {
      useEffect(() => onEditorDidMount?.(editor, monaco), [onEditorDidMount]);
      return <textarea aria-label="sql" defaultValue={value} onBlur={(e) => onBlur(e.currentTarget.value)} />;
    },
  };
});

async function setup(query: QuiverQuery) {
  const datasource = new DataSource(instanceSettings({ upstream: 'flightsql' }));
  jest
    .spyOn(datasource, 'getResource')
    .mockImplementation(async (path: string) =>
      path === 'tables'
        ? { tables: [{ catalog: 'main', schema: 'public', name: 'cpu' }] }
        : { columns: [{ name: 'usage', type: 'double' }] }
    );
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  await act(async () => {
    render(<CodeMode datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  });
  return { onChange, onRunQuery };
}

beforeEach(() => jest.clearAllMocks());

test('tableName joins the parts a table has', () => {
  expect(tableName({ catalog: 'main', schema: 'public', name: 'cpu' })).toBe('main.public.cpu');
  expect(tableName({ schema: 'public', name: 'cpu' })).toBe('public.cpu');
  expect(tableName({ name: 'cpu' })).toBe('cpu');
});

test('with a mounted editor, table and column chips type at its cursor instead of changing the query', async () => {
  const { onChange } = await setup({ refId: 'A', rawSql: 'SELECT ' });
  expect(monaco.languages.registerCompletionItemProvider).toHaveBeenCalledWith('sql', expect.any(Object));
  await pick(selectors.query.table, 'main.public.cpu');
  const columns = screen.getByTestId(selectors.query.columns);
  fireEvent.click(await within(columns).findByText('usage'));
  expect(editor.focus).toHaveBeenCalled();
  expect(editor.trigger).toHaveBeenLastCalledWith('quiver', 'type', { text: 'usage' });
  fireEvent.click(within(columns).getByRole('button', { name: 'main.public.cpu' }));
  expect(editor.trigger).toHaveBeenLastCalledWith('quiver', 'type', { text: 'main.public.cpu' });
  expect(onChange).not.toHaveBeenCalled();
});

test('SQL left unchanged neither changes nor runs the query; changed SQL does both, in code mode', async () => {
  const { onChange, onRunQuery } = await setup({ refId: 'A', rawSql: 'SELECT 1', editorMode: 'builder' });
  const sql = screen.getByLabelText('sql');
  fireEvent.blur(sql);
  expect(onChange).not.toHaveBeenCalled();
  expect(onRunQuery).not.toHaveBeenCalled();
  fireEvent.change(sql, { target: { value: 'SELECT 2' } });
  fireEvent.blur(sql);
  expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', rawSql: 'SELECT 2', editorMode: 'code' });
  expect(onRunQuery).toHaveBeenCalledTimes(1);
});
