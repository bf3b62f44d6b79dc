// Browser harness: mounts the real ConfigEditor and QueryEditor inside Grafana's theme, with a
// backend service that forwards resource calls to the harness server. The browser test drives
// the page and reads the saved state from window.quiverHarness.
import React, { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { from, lastValueFrom } from 'rxjs';
import {
  createTheme,
  DataQueryRequest,
  DataSourceSettings,
  getDefaultTimeRange,
  MetricFindValue,
  ScopedVars,
} from '@grafana/data';
import {
  BackendSrv,
  BackendSrvRequest,
  FetchResponse,
  setBackendSrv,
  setTemplateSrv,
  TemplateSrv,
} from '@grafana/runtime';
import { GlobalStyles, Input, ThemeContext } from '@grafana/ui';

import { ConfigEditor } from '../../src/components/ConfigEditor';
import { QueryEditor } from '../../src/components/QueryEditor';
import { VariableQueryEditor } from '../../src/components/VariableQueryEditor';
import { DataSource } from '../../src/datasource';
import { instanceSettings } from '../../src/testutil';
import { QuiverOptions, QuiverQuery, QuiverSecureJsonData } from '../../src/types';

type Options = DataSourceSettings<QuiverOptions, QuiverSecureJsonData>;

export interface HarnessState {
  options: Options;
  demoQuery: QuiverQuery;
  sqlQuery: QuiverQuery;
  variableQuery: QuiverQuery;
  variableValues: MetricFindValue[];
  runs: number;
}

declare global {
  interface Window {
    quiverHarness: { state: () => HarnessState };
  }
}

async function request<T>(options: BackendSrvRequest): Promise<FetchResponse<T>> {
  const url = new URL(options.url, window.location.origin);
  for (const [k, v] of Object.entries(options.params ?? {})) {
    url.searchParams.set(k, String(v));
  }
  const res = await fetch(url, {
    method: options.method ?? 'GET',
    headers: options.data ? { 'content-type': 'application/json' } : undefined,
    body: options.data ? JSON.stringify(options.data) : undefined,
  });
  const data = (await res.json()) as T;
  const response = {
    data,
    status: res.status,
    statusText: res.statusText,
    ok: res.ok,
    headers: res.headers,
    redirected: res.redirected,
    type: res.type,
    url: res.url,
    config: options,
  };
  if (!res.ok) {
    throw response;
  }
  return response;
}

setBackendSrv({
  fetch: <T,>(options: BackendSrvRequest) => from(request<T>(options)),
} as unknown as BackendSrv);

// Template variables as Grafana's template service replaces them: from the scoped variables, each
// value formatted by the data source's formatter.
setTemplateSrv({
  getVariables: () => [],
  containsTemplate: (t?: string) => /\$/.test(t ?? ''),
  updateTimeRange: () => {},
  replace: (target = '', scopedVars?: ScopedVars, format?: unknown) =>
    target.replace(/\$(\w+)|\$\{(\w+)\}/g, (m: string, a?: string, b?: string) => {
      const v = scopedVars?.[(a ?? b)!];
      if (!v) {
        return m;
      }
      return typeof format === 'function' ? format(v.value, {}) : String(v.value);
    }),
} as unknown as TemplateSrv);

const initialOptions: Options = {
  id: 1,
  uid: 'quiver-harness',
  orgId: 1,
  name: 'Quiver',
  type: 'quiver-arrow-datasource',
  typeName: 'Quiver',
  typeLogoUrl: '',
  access: 'proxy',
  url: '',
  user: '',
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- still required by the type
  database: '',
  basicAuth: false,
  basicAuthUser: '',
  isDefault: false,
  withCredentials: false,
  readOnly: false,
  jsonData: {},
  secureJsonFields: {},
  secureJsonData: {},
};

const demoDS = new DataSource({ ...instanceSettings({ maxSeries: 100 }), uid: 'quiver-demo' });
const sqlDS = new DataSource({ ...instanceSettings({ upstream: 'flightsql' }), uid: 'quiver-sql' });

const theme = createTheme({ colors: { mode: 'dark' } });

let snapshot: HarnessState;
window.quiverHarness = { state: () => JSON.parse(JSON.stringify(snapshot)) };

function App() {
  const [options, setOptions] = useState(initialOptions);
  const [demoQuery, setDemoQuery] = useState<QuiverQuery>({
    refId: 'A',
    ...demoDS.getDefaultQuery('panel-editor' as never),
  });
  const [sqlQuery, setSQLQuery] = useState<QuiverQuery>({
    refId: 'A',
    ...sqlDS.getDefaultQuery('panel-editor' as never),
  });
  const [variableQuery, setVariableQuery] = useState<QuiverQuery>({
    refId: 'A',
    ...(sqlDS.variables as unknown as { getDefaultQuery: () => Partial<QuiverQuery> }).getDefaultQuery(),
  });
  const [search, setSearch] = useState('');
  const [variableValues, setVariableValues] = useState<MetricFindValue[]>([]);
  const [runs, setRuns] = useState(0);
  useEffect(() => {
    snapshot = { options, demoQuery, sqlQuery, variableQuery, variableValues, runs };
  }, [options, demoQuery, sqlQuery, variableQuery, variableValues, runs]);
  // Run the variable's query as Grafana's variable editor does for its preview.
  useEffect(() => {
    if (!variableQuery.rawSql) {
      return;
    }
    const support = sqlDS.variables as unknown as {
      query: (r: DataQueryRequest<QuiverQuery>) => ReturnType<DataSource['query']>;
    };
    const request = {
      requestId: 'variable',
      app: 'dashboard',
      range: getDefaultTimeRange(),
      interval: '1m',
      intervalMs: 60000,
      targets: [variableQuery],
      scopedVars: search ? { __searchFilter: { text: search, value: search } } : {},
      timezone: 'utc',
      startTime: Date.now(),
    } as unknown as DataQueryRequest<QuiverQuery>;
    let live = true;
    lastValueFrom(support.query(request)).then((res) => live && setVariableValues(res.data as MetricFindValue[]));
    return () => {
      live = false;
    };
  }, [variableQuery, search]);
  const run = () => setRuns((n) => n + 1);
  return (
    <ThemeContext.Provider value={theme}>
      <GlobalStyles />
      {/* The layout, two columns or one, is in index.html. */}
      <main>
        <section id="config">
          <h2>Settings</h2>
          <ConfigEditor options={options} onOptionsChange={setOptions} />
        </section>
        <section>
          <h2>Query: Demo</h2>
          <div id="demo-query">
            <QueryEditor datasource={demoDS} query={demoQuery} onChange={setDemoQuery} onRunQuery={run} />
          </div>
          <h2 style={{ marginTop: 32 }}>Query: Flight SQL</h2>
          <div id="sql-query">
            <QueryEditor datasource={sqlDS} query={sqlQuery} onChange={setSQLQuery} onRunQuery={run} />
          </div>
          <h2 style={{ marginTop: 32 }}>Variable: Flight SQL</h2>
          <div id="variable-query">
            <VariableQueryEditor
              datasource={sqlDS}
              query={variableQuery}
              onChange={setVariableQuery}
              onRunQuery={run}
            />
            <Input
              id="variable-search"
              placeholder="Search the values"
              value={search}
              onChange={(e) => setSearch(e.currentTarget.value)}
            />
            <ul id="variable-values">
              {variableValues.map((v) => (
                <li key={String(v.value)}>{v.text}</li>
              ))}
            </ul>
          </div>
        </section>
      </main>
    </ThemeContext.Provider>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
