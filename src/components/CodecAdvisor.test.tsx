import React from 'react';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { of, throwError } from 'rxjs';

import { selectors } from '../selectors';
import { AdviseFigures, AdviseResult, CodecAdvisor, settingName, settingPatch } from './CodecAdvisor';

const fetch = jest.fn();

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ fetch }),
}));

/** Answers the next resource call with data. */
function answer(data: AdviseResult) {
  fetch.mockReturnValue(of({ data, status: 200 }));
}

function figures(codec: AdviseFigures['codec'], level: number, extra: Partial<AdviseFigures> = {}): AdviseFigures {
  return {
    codec,
    level,
    wireBytes: 1000,
    ratio: 1,
    encodeMicrosPerFrame: 10,
    decodeMicrosPerFrame: 90,
    totalMicrosPerFrame: 100,
    buffersCompressed: 0,
    buffersRaw: 2,
    buffersSkipped: 0,
    framesAs: { none: 4 },
    ...extra,
  };
}

const result: AdviseResult = {
  frames: 4,
  rows: 1000,
  settings: [
    figures('auto', 0, { codecPreference: 'cpu' }),
    figures('auto', 0, { codecPreference: 'bytes', wireBytes: 500, ratio: 2, framesAs: { zstd: 4 } }),
    figures('none', 0),
    figures('zstd', 3, { wireBytes: 500, ratio: 2, buffersCompressed: 2, buffersRaw: 0, framesAs: { zstd: 4 } }),
  ],
};

beforeEach(() => fetch.mockReset());

test('Measure posts the demo query and shows every setting; Use this setting fills codec and level', async () => {
  answer(result);
  const onUse = jest.fn();
  render(<CodecAdvisor uid="ds1" upstream="demo" onUse={onUse} />);
  await userEvent.click(screen.getByTestId(selectors.config.advisorMeasure));
  await waitFor(() => expect(screen.getByTestId(selectors.config.advisorRow('zstd 3'))).toBeInTheDocument());

  expect(fetch).toHaveBeenCalledTimes(1);
  const { url, method, data: body } = fetch.mock.calls[0][0];
  expect(url).toBe('/api/datasources/uid/ds1/resources/advise');
  expect(method).toBe('POST');
  expect(body.query).toEqual({ scenario: 'random_walk', seriesCount: 100 });
  expect(body.to - body.from).toBe(3600_000);

  for (const name of ['auto cpu', 'auto bytes', 'none', 'zstd 3']) {
    expect(screen.getByTestId(selectors.config.advisorRow(name))).toBeInTheDocument();
  }
  const zstd = screen.getByTestId(selectors.config.advisorRow('zstd 3'));
  expect(zstd).toHaveTextContent('2.00×');
  expect(zstd).toHaveTextContent('2 / 0 / 0');
  expect(zstd).toHaveTextContent('zstd 4');

  await userEvent.click(screen.getByTestId(selectors.config.advisorUse('zstd 3')));
  expect(onUse).toHaveBeenLastCalledWith({ codec: 'zstd', level: 3 });
  await userEvent.click(screen.getByTestId(selectors.config.advisorUse('auto bytes')));
  expect(onUse).toHaveBeenLastCalledWith({ codec: 'auto', level: undefined, codecPreference: 'bytes' });
});

test('a refusal shows the backend message', async () => {
  fetch.mockReturnValue(
    throwError(() => ({ status: 424, data: { error: 'advise: the data source fails its health check: unreachable' } }))
  );
  render(<CodecAdvisor uid="ds1" upstream="demo" onUse={jest.fn()} />);
  await userEvent.click(screen.getByTestId(selectors.config.advisorMeasure));
  await waitFor(() =>
    expect(screen.getByTestId(selectors.config.advisorError)).toHaveTextContent('fails its health check')
  );
});

test('Flight SQL asks for SQL before it measures', async () => {
  answer(result);
  render(<CodecAdvisor uid="ds1" upstream="flightsql" onUse={jest.fn()} />);
  const button = screen.getByTestId(selectors.config.advisorMeasure);
  expect(button).toBeDisabled();
  await userEvent.type(screen.getByPlaceholderText('SELECT …'), 'SELECT * FROM t');
  await userEvent.click(button);
  await waitFor(() => expect(fetch).toHaveBeenCalledTimes(1));
  expect(fetch.mock.calls[0][0].data.query).toEqual({ rawSql: 'SELECT * FROM t', format: 'table' });
});

test('settingName and settingPatch', () => {
  expect(settingName({ codec: 'lz4', level: 9 })).toBe('lz4 9');
  expect(settingPatch(figures('none', 0))).toEqual({ codec: 'none', level: undefined });
});
