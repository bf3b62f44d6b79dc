import React from 'react';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { AdviseFigures, AdviseResult } from './figures';
import { AdvisorTable } from './AdvisorTable';

function figures(codec: AdviseFigures['codec'], level: number, extra: Partial<AdviseFigures> = {}): AdviseFigures {
  return {
    codec,
    level,
    wireBytes: 2048,
    ratio: 1,
    encodeMicrosPerFrame: 5,
    decodeMicrosPerFrame: 95,
    totalMicrosPerFrame: 100,
    buffersCompressed: 0,
    buffersRaw: 3,
    buffersSkipped: 1,
    framesAs: { none: 4, zstd: 0 },
    ...extra,
  };
}

const result: AdviseResult = {
  frames: 4,
  rows: 1000,
  settings: [
    figures('none', 0),
    figures('lz4', 9, { wireBytes: 1024, ratio: 2, totalMicrosPerFrame: 50, framesAs: { lz4: 3, none: 1 } }),
  ],
};

test('one row per setting with its figures; bars relative to the largest', () => {
  render(<AdvisorTable result={result} onUse={jest.fn()} />);
  expect(screen.getByText('4 frames, 1000 rows')).toBeInTheDocument();
  const headers = screen.getAllByRole('columnheader').map((th) => th.textContent);
  expect(headers).toEqual([...Object.values(labels.compression.advisor.columns), labels.compression.advisor.chart, '']);

  const none = within(screen.getByTestId(selectors.config.advisorRow('none')));
  const cells = none.getAllByRole('cell').map((td) => td.textContent);
  expect(cells.slice(0, 8)).toEqual(['none', '2.0 KiB', '1.00×', '5.0', '95.0', '100', '0 / 3 / 1', 'none 4']);
  const lz4 = screen.getByTestId(selectors.config.advisorRow('lz4 9'));
  expect(within(lz4).getAllByRole('cell')[7]).toHaveTextContent('lz4 3, none 1');

  // none has the most CPU and bytes: full bars; lz4 half of each.
  expect(screen.getByTitle('100 µs/frame')).toHaveStyle({ width: '100%' });
  expect(screen.getByTitle('50.0 µs/frame')).toHaveStyle({ width: '50%' });
  expect(screen.getByTitle('1.0 KiB')).toHaveStyle({ width: '50%' });
});

test('Use this setting hands over the jsonData patch of its row', async () => {
  const onUse = jest.fn();
  render(<AdvisorTable result={result} onUse={onUse} />);
  await userEvent.click(screen.getByTestId(selectors.config.advisorUse('lz4 9')));
  expect(onUse).toHaveBeenLastCalledWith({ codec: 'lz4', level: 9 });
  await userEvent.click(screen.getByTestId(selectors.config.advisorUse('none')));
  expect(onUse).toHaveBeenLastCalledWith({ codec: 'none', level: undefined });
});
