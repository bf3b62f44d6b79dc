import { act, renderHook } from '@testing-library/react';
import { Subject, throwError } from 'rxjs';

import { AdviseResult } from './figures';
import { advisorQuery, advisorReducer, initialAdvisorState, useAdvisor } from './useAdvisor';

const fetch = jest.fn();

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ fetch }),
}));

const result: AdviseResult = { frames: 1, rows: 10, settings: [] };

beforeEach(() => fetch.mockReset());

describe('advisorReducer', () => {
  it('keeps the last table while measuring again and clears the last error', () => {
    const s = advisorReducer({ ...initialAdvisorState, result, error: 'old' }, { type: 'start' });
    expect(s).toMatchObject({ busy: true, result, error: undefined });
  });

  it('a failure clears the table and says why; an answer replaces it', () => {
    const busy = { ...initialAdvisorState, busy: true, result };
    expect(advisorReducer(busy, { type: 'failed', error: 'no' })).toMatchObject({
      busy: false,
      result: undefined,
      error: 'no',
    });
    const next = { ...result, rows: 20 };
    expect(advisorReducer(busy, { type: 'done', result: next })).toMatchObject({ busy: false, result: next });
  });

  it('set changes only the inputs given', () => {
    expect(advisorReducer(initialAdvisorState, { type: 'set', patch: { sql: 'SELECT 1' } })).toEqual({
      ...initialAdvisorState,
      sql: 'SELECT 1',
    });
  });
});

test('advisorQuery sends SQL as a table for Flight SQL, else the demo scenario', () => {
  const inputs = { ...initialAdvisorState, sql: 'SELECT 1', scenario: 'logs' as const, seriesCount: 5 };
  expect(advisorQuery('flightsql', inputs)).toEqual({ rawSql: 'SELECT 1', format: 'table' });
  expect(advisorQuery('demo', inputs)).toEqual({ scenario: 'logs', seriesCount: 5 });
});

describe('useAdvisor', () => {
  it('measures the inputs set over the range chosen, busy until the answer', async () => {
    const answer = new Subject<{ data: AdviseResult }>();
    fetch.mockReturnValue(answer);
    const { result: hook } = renderHook(() => useAdvisor('ds/1', 'demo'));
    expect(hook.current.ready).toBe(true);
    act(() => hook.current.set({ scenario: 'logs', seriesCount: 7, range: 6 * 3600_000 }));

    let measured: Promise<void> = Promise.resolve();
    act(() => {
      measured = hook.current.measure();
    });
    expect(hook.current.state.busy).toBe(true);
    expect(hook.current.ready).toBe(false);
    const { url, method, data, showErrorAlert } = fetch.mock.calls[0][0];
    expect(url).toBe('/api/datasources/uid/ds%2F1/resources/advise');
    expect(method).toBe('POST');
    expect(showErrorAlert).toBe(false);
    expect(data.query).toEqual({ scenario: 'logs', seriesCount: 7 });
    expect(data.to - data.from).toBe(6 * 3600_000);
    expect(data.maxDataPoints).toBe(1000);

    await act(async () => {
      answer.next({ data: result });
      answer.complete();
      await measured;
    });
    expect(hook.current.state).toMatchObject({ busy: false, result, error: undefined });
    expect(hook.current.ready).toBe(true);
  });

  it('keeps the refusal for the page to show', async () => {
    fetch.mockReturnValue(throwError(() => ({ data: { error: 'advise: no such data source' } })));
    const { result: hook } = renderHook(() => useAdvisor('ds1', 'demo'));
    await act(() => hook.current.measure());
    expect(hook.current.state).toMatchObject({ busy: false, result: undefined, error: 'advise: no such data source' });
  });

  it('is not ready without a uid, nor for Flight SQL without SQL', () => {
    expect(renderHook(() => useAdvisor('', 'demo')).result.current.ready).toBe(false);
    const { result: hook } = renderHook(() => useAdvisor('ds1', 'flightsql'));
    expect(hook.current.ready).toBe(false);
    act(() => hook.current.set({ sql: '   ' }));
    expect(hook.current.ready).toBe(false);
    act(() => hook.current.set({ sql: 'SELECT 1' }));
    expect(hook.current.ready).toBe(true);
  });
});
