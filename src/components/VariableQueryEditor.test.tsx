import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../datasource';
import { selectors } from '../selectors';
import { instanceSettings } from '../testutil';
import { QuiverOptions, QuiverQuery } from '../types';
import { VariableQueryEditor } from './VariableQueryEditor';

// Monaco does not run in jsdom: stand in a textarea that reports blur like CodeEditor does.
jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return {
    ...actual,
    CodeEditor: ({ value, onBlur }: { value: string; onBlur: (v: string) => void }) => (
      <textarea aria-label="sql" defaultValue={value} onBlur={(e) => onBlur(e.currentTarget.value)} />
    ),
  };
});

async function setup(query: QuiverQuery, jsonData: QuiverOptions = {}) {
  const datasource = new DataSource(instanceSettings(jsonData));
  jest.spyOn(datasource, 'getResource').mockRejectedValue(new Error('not found'));
  const onChange = jest.fn();
  await act(async () => {
    render(<VariableQueryEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={jest.fn()} />);
  });
  return { onChange };
}

describe('VariableQueryEditor', () => {
  it('edits the SQL of a Flight SQL variable as a table query and explains the columns', async () => {
    const { onChange } = await setup({ refId: 'A', rawSql: '' }, { upstream: 'flightsql' });
    const sql = within(screen.getByTestId(selectors.variable.sql)).getByLabelText('sql');
    fireEvent.change(sql, { target: { value: "SELECT DISTINCT host FROM cpu WHERE host LIKE '$__searchFilter'" } });
    fireEvent.blur(sql);
    expect(onChange).toHaveBeenCalledWith({
      refId: 'A',
      rawSql: "SELECT DISTINCT host FROM cpu WHERE host LIKE '$__searchFilter'",
      format: 'table',
    });
    expect(screen.getByText(/__value and __text/)).toBeInTheDocument();
  });

  it('shows and edits the SQL of a variable query saved as a string', async () => {
    const { onChange } = await setup('SELECT host FROM cpu' as unknown as QuiverQuery, { upstream: 'flightsql' });
    const sql = within(screen.getByTestId(selectors.variable.sql)).getByLabelText('sql');
    expect(sql).toHaveValue('SELECT host FROM cpu');
    fireEvent.change(sql, { target: { value: 'SELECT DISTINCT host FROM cpu' } });
    fireEvent.blur(sql);
    expect(onChange).toHaveBeenCalledWith({
      refId: 'variable',
      rawSql: 'SELECT DISTINCT host FROM cpu',
      format: 'table',
    });
  });

  it('chooses the label and the number of series of a demo variable', async () => {
    const { onChange } = await setup({ refId: 'A', scenario: 'labels', label: 'host', seriesCount: 10 });
    const group = screen.getByTestId(selectors.variable.label);
    expect(within(group).getByLabelText('Hosts')).toBeChecked();
    fireEvent.click(within(group).getByLabelText('Regions'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', scenario: 'labels', label: 'region', seriesCount: 10 });
    fireEvent.change(screen.getByTestId(selectors.variable.seriesCount), { target: { value: '25' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', scenario: 'labels', label: 'host', seriesCount: 25 });
    expect(screen.queryByTestId(selectors.variable.sql)).not.toBeInTheDocument();
  });
});
