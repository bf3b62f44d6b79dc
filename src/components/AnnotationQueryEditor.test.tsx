import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../datasource';
import { selectors } from '../selectors';
import { instanceSettings } from '../testutil';
import { QuiverOptions, QuiverQuery } from '../types';
import { AnnotationQueryEditor } from './AnnotationQueryEditor';

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
    render(<AnnotationQueryEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={jest.fn()} />);
  });
  return { onChange, datasource };
}

describe('AnnotationQueryEditor', () => {
  it('edits the SQL of a Flight SQL annotation as a table query and names the columns it reads', async () => {
    const { onChange } = await setup({ refId: 'Anno', rawSql: '' }, { upstream: 'flightsql' });
    const sql = within(screen.getByTestId(selectors.annotation.sql)).getByLabelText('sql');
    fireEvent.change(sql, { target: { value: 'SELECT time, text, tags FROM deploys WHERE $__timeFilter(time)' } });
    fireEvent.blur(sql);
    expect(onChange).toHaveBeenCalledWith({
      refId: 'Anno',
      rawSql: 'SELECT time, text, tags FROM deploys WHERE $__timeFilter(time)',
      format: 'table',
    });
    expect(screen.getByText(/timeEnd for a region/)).toBeInTheDocument();
  });

  it('shows the demo events and their host count', async () => {
    const { onChange } = await setup({ refId: 'Anno', scenario: 'events' });
    expect(within(screen.getByTestId(selectors.annotation.demo)).getByText(/deploys \(instants\)/)).toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.annotation.seriesCount), { target: { value: '3' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'Anno', scenario: 'events', seriesCount: 3 });
  });
});
