import { map, Observable } from 'rxjs';
import {
  CustomVariableSupport,
  DataFrame,
  DataQueryRequest,
  DataQueryResponse,
  MetricFindValue,
  ScopedVars,
} from '@grafana/data';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import type { DataSource } from './datasource';
import { QuiverQuery } from './types';

/** Query a new variable starts with on a Demo data source: its hosts. */
export const defaultDemoVariableQuery: Partial<QuiverQuery> = { scenario: 'labels', label: 'host', seriesCount: 10 };

/** Query a new variable starts with on a Flight SQL data source. */
export const defaultSQLVariableQuery: Partial<QuiverQuery> = { rawSql: '', format: 'table' };

/**
 * Text of one value for a variable: strings as they are, other values in their JSON form (numbers
 * and booleans print as themselves).
 */
function asText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Values and texts of a variable from the frames of its query: a column named `__value` gives the
 * values and one named `__text` the texts, as in Grafana's SQL data sources; either alone gives both,
 * and without them the first column gives both (Grafana's SQL data sources list every column's
 * values then). Null values are left out; a value listed twice is kept once, with its first text.
 */
export function metricFindValues(frames: DataFrame[]): MetricFindValue[] {
  const out: MetricFindValue[] = [];
  const seen = new Set<string>();
  for (const frame of frames) {
    const named = (name: string) => frame.fields.find((f) => f.name === name);
    const valueField = named('__value') ?? named('__text') ?? frame.fields[0];
    const textField = named('__text') ?? valueField;
    if (!valueField) {
      continue;
    }
    for (let i = 0; i < valueField.values.length; i++) {
      const v = valueField.values[i];
      if (v === null || v === undefined) {
        continue;
      }
      const value = asText(v);
      if (seen.has(value)) {
        continue;
      }
      seen.add(value);
      const t = textField.values[i];
      out.push({ value, text: t === null || t === undefined ? value : asText(t) });
    }
  }
  return out;
}

/**
 * The scoped variables of a query's SQL: those given and, when the SQL names `$__searchFilter`, that
 * variable as Grafana's SQL data sources set it: what the user typed into a searchable variable's box
 * followed by `%` (just `%` when nothing was typed). TemplateSrv inserts it like any single value,
 * its quotes doubled (formatSQLVariable) and variables in the typed text left as typed. Grafana
 * passes the typed text as the scoped variable `__searchFilter` (dashboards on scenes) or `searchFilter`.
 */
export function withSearchFilter(sql: string, scopedVars: ScopedVars): ScopedVars {
  if (!sql.includes('__searchFilter')) {
    return scopedVars;
  }
  const typed = scopedVars?.__searchFilter?.value ?? scopedVars?.searchFilter?.value ?? '';
  return { ...scopedVars, __searchFilter: { value: `${typed}%`, text: '' } };
}

/**
 * A variable query as saved: an object, or the SQL alone as a string (dashboards made for Grafana's
 * SQL data sources, provisioning).
 */
export function variableQuery(q: QuiverQuery | string): QuiverQuery {
  return typeof q === 'string' ? { refId: 'variable', rawSql: q } : q;
}

/**
 * Query variables: the variable's query runs on the backend like a panel's (the same limits and
 * errors), as a table; its first frame's values become the variable's options (metricFindValues).
 */
export class QuiverVariableSupport extends CustomVariableSupport<DataSource, QuiverQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: DataSource) {
    super();
  }

  getDefaultQuery(): Partial<QuiverQuery> {
    return this.datasource.upstream === 'flightsql' ? defaultSQLVariableQuery : defaultDemoVariableQuery;
  }

  query(request: DataQueryRequest<QuiverQuery>): Observable<DataQueryResponse> {
    const targets = request.targets.map((saved) => {
      const t = variableQuery(saved);
      return this.datasource.upstream === 'flightsql'
        ? { ...t, format: 'table' as const }
        : { ...t, scenario: 'labels' as const, label: t.label ?? defaultDemoVariableQuery.label };
    });
    return this.datasource
      .query({ ...request, targets })
      .pipe(map((res) => ({ ...res, data: metricFindValues(res.data as DataFrame[]) })));
  }
}
