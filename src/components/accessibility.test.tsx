// Screen readers name every radio group of the editors and each of its options (RadioButtonGroup gets an
// aria-label from us; @grafana/ui 13 also labels a group by its Field). Runs on both React lines.
import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';

import { DataSource } from '../datasource';
import { instanceSettings } from '../testutil';
import { QuiverOptions, QuiverQuery, QuiverSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';
import { QueryEditor } from './QueryEditor';
import { VariableQueryEditor } from './VariableQueryEditor';

jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return {
    ...actual,
    CodeEditor: ({ value }: { value: string }) => <textarea aria-label="sql" defaultValue={value} />,
  };
});

/** Every radio group on the page has a name, and so has each of its radios. */
function expectNamedGroups(min: number) {
  const groups = screen.getAllByRole('radiogroup');
  expect(groups.length).toBeGreaterThanOrEqual(min);
  for (const group of groups) {
    expect(group).toHaveAccessibleName();
    for (const radio of within(group).getAllByRole('radio')) {
      expect(radio).toHaveAccessibleName();
    }
  }
}

const options = (jsonData: QuiverOptions): DataSourceSettings<QuiverOptions, QuiverSecureJsonData> =>
  ({ uid: 'quiver', jsonData, secureJsonFields: {}, secureJsonData: {} }) as never;

async function renderQuery(query: QuiverQuery, jsonData: QuiverOptions) {
  const datasource = new DataSource(instanceSettings(jsonData));
  jest.spyOn(datasource, 'getResource').mockRejectedValue(new Error('not found'));
  await act(async () => {
    render(<QueryEditor datasource={datasource} query={query} onChange={jest.fn()} onRunQuery={jest.fn()} />);
  });
}

test('settings: source, codec, preference, authentication and the advisor’s groups are named', async () => {
  await act(async () => {
    render(
      <ConfigEditor options={options({ upstream: 'flightsql', oauthPassThru: true })} onOptionsChange={jest.fn()} />
    );
  });
  expectNamedGroups(6);
  expect(
    within(screen.getByRole('radiogroup', { name: /^Source/ })).getByRole('radio', { name: 'Flight SQL' })
  ).toBeChecked();
  const codec = screen.getByRole('radiogroup', { name: /^Codec/ });
  expect(within(codec).getByRole('radio', { name: 'auto' })).toBeChecked();
  expect(within(codec).getByLabelText('zstd')).not.toBeChecked();
  expect(screen.getByRole('radiogroup', { name: /^Auto prefers/ })).toBeInTheDocument();
  expect(
    within(screen.getByRole('radiogroup', { name: /^Method/ })).getByRole('radio', { name: 'None' })
  ).toBeChecked();
  expect(screen.getByRole('radiogroup', { name: /^Calls without a signed-in user/ })).toBeInTheDocument();
  expect(screen.getByRole('radiogroup', { name: /^Time range/ })).toBeInTheDocument();
});

test('demo settings: the advisor’s scenario group is named', async () => {
  await act(async () => {
    render(<ConfigEditor options={options({})} onOptionsChange={jest.fn()} />);
  });
  expectNamedGroups(4);
  expect(screen.getByRole('radiogroup', { name: /^Demo scenario/ })).toBeInTheDocument();
});

test('demo query: the scenario group is named', async () => {
  await renderQuery({ refId: 'A', scenario: 'random_walk' }, {});
  expectNamedGroups(1);
  expect(
    within(screen.getByRole('radiogroup', { name: /^Scenario/ })).getByRole('radio', { name: 'Random walk' })
  ).toBeChecked();
});

test('Flight SQL query: editor mode, format and the builder’s order direction are named', async () => {
  await renderQuery({ refId: 'A', editorMode: 'code', rawSql: 'SELECT 1', format: 'table' }, { upstream: 'flightsql' });
  expectNamedGroups(2);
  expect(
    within(screen.getByRole('radiogroup', { name: 'Editor mode' })).getByRole('radio', { name: 'Code' })
  ).toBeChecked();
  expect(
    within(screen.getByRole('radiogroup', { name: /^Format/ })).getByRole('radio', { name: 'Table' })
  ).toBeChecked();
  await act(async () => {
    fireEvent.click(
      within(screen.getByRole('radiogroup', { name: 'Editor mode' })).getByRole('radio', { name: 'Builder' })
    );
  });
  await act(async () => {
    fireEvent.click(screen.getByRole('button', { name: 'Discard the SQL and switch' }));
  });
  expectNamedGroups(2);
});

test('builder with an order column: the direction group is named', async () => {
  await renderQuery(
    {
      refId: 'A',
      editorMode: 'builder',
      format: 'table',
      builder: { table: { name: 'cpu' }, values: [], groupBy: [], filters: [], orderBy: 'host' },
    },
    { upstream: 'flightsql' }
  );
  expect(
    within(screen.getByRole('radiogroup', { name: 'Order direction' })).getByRole('radio', { name: 'ASC' })
  ).toBeChecked();
});

test('demo variable: the label group is named', async () => {
  const datasource = new DataSource(instanceSettings({}));
  await act(async () => {
    render(
      <VariableQueryEditor
        datasource={datasource}
        query={{ refId: 'A', scenario: 'labels' }}
        onChange={jest.fn()}
        onRunQuery={jest.fn()}
      />
    );
  });
  expectNamedGroups(1);
  expect(
    within(screen.getByRole('radiogroup', { name: /^Label/ })).getByRole('radio', { name: 'Hosts' })
  ).toBeChecked();
});
