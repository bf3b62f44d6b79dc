import { useEffect, useReducer, useRef } from 'react';
import { lastValueFrom, Subject, takeUntil } from 'rxjs';
import { getBackendSrv } from '@grafana/runtime';

import { Scenario, Upstream } from '../../types';
import { AdviseResult, errorText } from './figures';

/** What the administrator measures: a demo query or SQL, over a time range ending now. */
export interface AdvisorInputs {
  scenario: Scenario;
  seriesCount: number;
  sql: string;
  /** The time range in milliseconds. */
  range: number;
}

/** The advisor's state: its inputs, and the measurement in flight, failed or done. */
export interface AdvisorState extends AdvisorInputs {
  busy: boolean;
  error?: string;
  result?: AdviseResult;
}

export type AdvisorAction =
  | { type: 'set'; patch: Partial<AdvisorInputs> }
  | { type: 'start' }
  | { type: 'done'; result: AdviseResult }
  | { type: 'failed'; error: string };

export const initialAdvisorState: AdvisorState = {
  scenario: 'random_walk',
  seriesCount: 100,
  sql: '',
  range: 3600_000,
  busy: false,
};

/** A measurement keeps the last table until it answers; a failure clears it and says why. */
export function advisorReducer(state: AdvisorState, action: AdvisorAction): AdvisorState {
  switch (action.type) {
    case 'set':
      return { ...state, ...action.patch };
    case 'start':
      return { ...state, busy: true, error: undefined };
    case 'done':
      return { ...state, busy: false, result: action.result };
    case 'failed':
      return { ...state, busy: false, result: undefined, error: action.error };
  }
}

/** The query the advisor sends: the SQL as a table for Flight SQL, else the demo scenario and series count. */
export function advisorQuery(upstream: Upstream, inputs: AdvisorInputs) {
  return upstream === 'flightsql'
    ? { rawSql: inputs.sql, format: 'table' }
    : { scenario: inputs.scenario, seriesCount: inputs.seriesCount };
}

/**
 * The codec advisor's state and its one action: `measure` posts the query to the data source's `advise`
 * resource (with its saved settings), cancelled on unmount. `ready` is false while measuring, without a uid, or
 * without SQL.
 */
export function useAdvisor(uid: string, upstream: Upstream) {
  const [state, dispatch] = useReducer(advisorReducer, initialAdvisorState);
  const set = (patch: Partial<AdvisorInputs>) => dispatch({ type: 'set', patch });
  // Leaving the page cancels a measurement in flight: Grafana aborts the request, which frees the backend's
  // one advise slot instead of holding it (and its CPU) until the measurement ends.
  const unmounted = useRef(new Subject<void>());
  useEffect(() => {
    const u = unmounted.current;
    return () => u.next();
  }, []);

  const measure = async () => {
    dispatch({ type: 'start' });
    const to = Date.now();
    try {
      const res = await lastValueFrom(
        getBackendSrv()
          .fetch<AdviseResult>({
            url: `/api/datasources/uid/${encodeURIComponent(uid)}/resources/advise`,
            method: 'POST',
            data: { query: advisorQuery(upstream, state), from: to - state.range, to, maxDataPoints: 1000 },
            showErrorAlert: false,
          })
          .pipe(takeUntil(unmounted.current))
      );
      dispatch({ type: 'done', result: res.data });
    } catch (e: unknown) {
      dispatch({ type: 'failed', error: errorText(e) });
    }
  };

  const ready = !state.busy && Boolean(uid) && !(upstream === 'flightsql' && state.sql.trim() === '');
  return { state, set, measure, ready };
}
