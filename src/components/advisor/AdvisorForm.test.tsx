import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { Upstream } from '../../types';
import { AdvisorForm } from './AdvisorForm';
import { initialAdvisorState } from './useAdvisor';

function setup(upstream: Upstream, extra: { busy?: boolean; ready?: boolean } = {}) {
  const set = jest.fn();
  const onMeasure = jest.fn();
  render(
    <AdvisorForm
      upstream={upstream}
      inputs={initialAdvisorState}
      set={set}
      busy={extra.busy ?? false}
      ready={extra.ready ?? true}
      onMeasure={onMeasure}
    />
  );
  return { set, onMeasure };
}

test('the demo asks scenario, series and range, each reported as its input', async () => {
  const { set, onMeasure } = setup('demo');
  expect(screen.queryByPlaceholderText('SELECT …')).not.toBeInTheDocument();
  expect(screen.getByLabelText('random_walk')).toBeChecked();
  await userEvent.click(screen.getByLabelText('logs'));
  expect(set).toHaveBeenLastCalledWith({ scenario: 'logs' });
  fireEvent.change(screen.getByDisplayValue('100'), { target: { value: '250' } });
  expect(set).toHaveBeenLastCalledWith({ seriesCount: 250 });
  expect(screen.getByLabelText('1h')).toBeChecked();
  await userEvent.click(screen.getByLabelText('6h'));
  expect(set).toHaveBeenLastCalledWith({ range: 6 * 3600_000 });
  await userEvent.click(screen.getByTestId(selectors.config.advisorMeasure));
  expect(onMeasure).toHaveBeenCalledTimes(1);
});

test('Flight SQL asks SQL instead of a scenario', () => {
  const { set } = setup('flightsql');
  expect(screen.queryByLabelText('random_walk')).not.toBeInTheDocument();
  fireEvent.change(screen.getByPlaceholderText('SELECT …'), { target: { value: 'SELECT * FROM t' } });
  expect(set).toHaveBeenLastCalledWith({ sql: 'SELECT * FROM t' });
});

test('Measure is disabled unless ready and says so while measuring', async () => {
  const { onMeasure } = setup('demo', { busy: true, ready: false });
  const button = screen.getByTestId(selectors.config.advisorMeasure);
  expect(button).toBeDisabled();
  expect(button).toHaveTextContent(labels.compression.advisor.measuring);
  await userEvent.click(button);
  expect(onMeasure).not.toHaveBeenCalled();
});
