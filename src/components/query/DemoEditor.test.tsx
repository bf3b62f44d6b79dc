import React from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';

import { DataSource } from '../../datasource';
import { selectors } from '../../selectors';
import { instanceSettings } from '../../testutil';
import { QuiverQuery } from '../../types';
import { DemoEditor, validSeriesCount } from './DemoEditor';

function setup(query: QuiverQuery) {
  const datasource = new DataSource(instanceSettings({ maxSeries: 50 }));
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  render(<DemoEditor datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />);
  return { onChange, onRunQuery };
}

test('validSeriesCount: unset, or a whole number from 1 to the limit', () => {
  expect(validSeriesCount(undefined, 50)).toBe(true);
  expect(validSeriesCount(1, 50)).toBe(true);
  expect(validSeriesCount(50, 50)).toBe(true);
  expect(validSeriesCount(0, 50)).toBe(false);
  expect(validSeriesCount(51, 50)).toBe(false);
  expect(validSeriesCount(2.5, 50)).toBe(false);
  expect(validSeriesCount(NaN, 50)).toBe(false);
});

test('an empty query shows the defaults: random walk, 10 series, seed 1', () => {
  setup({ refId: 'A' });
  expect(within(screen.getByTestId(selectors.query.scenario)).getByLabelText('Random walk')).toBeChecked();
  expect(screen.getByTestId(selectors.query.seriesCount)).toHaveAttribute('placeholder', '10');
  expect(screen.getByTestId(selectors.query.seed)).toHaveAttribute('placeholder', '1');
});

test('typing changes the query; leaving the field runs it', () => {
  const { onChange, onRunQuery } = setup({ refId: 'A', seriesCount: 10 });
  const seed = screen.getByTestId(selectors.query.seed);
  fireEvent.change(seed, { target: { value: '42' } });
  expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', seriesCount: 10, seed: 42 });
  expect(onRunQuery).not.toHaveBeenCalled();
  fireEvent.blur(seed);
  expect(onRunQuery).toHaveBeenCalledTimes(1);

  // emptied, the series count goes back to the default (undefined), which is valid
  fireEvent.change(screen.getByTestId(selectors.query.seriesCount), { target: { value: '' } });
  expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', seriesCount: undefined });
});

test("a scenario runs the query only when the series count is within the data source's limit", () => {
  const { onRunQuery } = setup({ refId: 'A', seriesCount: 51 });
  expect(screen.getByText('Series must be a whole number from 1 to 50.')).toBeInTheDocument();
  fireEvent.click(within(screen.getByTestId(selectors.query.scenario)).getByLabelText('Logs'));
  expect(onRunQuery).not.toHaveBeenCalled();
});
