// Browser harness: mounts the real ConfigEditor (with its codec advisor), QueryEditor (code and builder),
// variable and annotation editors inside Grafana's theme, with a backend service that forwards resource
// calls to the harness server. The browser test drives the page and reads the saved state from
// window.quiverHarness. build.mjs bundles it once per React line (18 with @grafana/* 12.4, 19 with
// @grafana/* 13); the page reports the versions it rendered with.
import React, { useEffect, useState } from 'react';
import { version as reactDOMVersion } from 'react-dom';
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
import { version as grafanaUIVersion } from '@grafana/ui/package.json';

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
  annotationDemoQuery: QuiverQuery;
  annotationSQLQuery: QuiverQuery;
  runs: number;
}

/** The versions the page rendered with, and the line build.mjs bundled it for. */
export interface HarnessVersions {
  line: string;
  react: string;
  reactDOM: string;
  grafanaUI: string;
}

declare const QUIVER_REACT_MAJOR: string;

declare global {
  interface Window {
    quiverHarness: { state: () => HarnessState; versions: HarnessVersions };
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
window.quiverHarness = {
  state: () => JSON.parse(JSON.stringify(snapshot)),
  versions: { line: QUIVER_REACT_MAJOR, react: React.version, reactDOM: reactDOMVersion, grafanaUI: grafanaUIVersion },
};

/** The annotation editor as Grafana takes it: from the data source's annotation support. */
const annotationEditor = (ds: DataSource) =>
  ds.annotations!.QueryEditor as unknown as React.ComponentType<{
    datasource: DataSource;
    query: QuiverQuery;
    onChange: (q: QuiverQuery) => void;
    onRunQuery: () => void;
  }>;
const DemoAnnotationEditor = annotationEditor(demoDS);
const SQLAnnotationEditor = annotationEditor(sqlDS);
/** A new annotation's query, as Grafana starts it: the annotation support's default. */
const prepared = (ds: DataSource): QuiverQuery => ({ refId: 'Anno', ...ds.annotations!.getDefaultQuery!() });

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
  const [annotationDemoQuery, setAnnotationDemoQuery] = useState<QuiverQuery>(() => prepared(demoDS));
  const [annotationSQLQuery, setAnnotationSQLQuery] = useState<QuiverQuery>(() => prepared(sqlDS));
  const [runs, setRuns] = useState(0);
  useEffect(() => {
    snapshot = {
      options,
      demoQuery,
      sqlQuery,
      variableQuery,
      variableValues,
      annotationDemoQuery,
      annotationSQLQuery,
      runs,
    };
  }, [options, demoQuery, sqlQuery, variableQuery, variableValues, annotationDemoQuery, annotationSQLQuery, runs]);
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
          <h2 style={{ marginTop: 32 }}>Annotations: Demo</h2>
          <div id="annotation-demo">
            <DemoAnnotationEditor
              datasource={demoDS}
              query={annotationDemoQuery}
              onChange={setAnnotationDemoQuery}
              onRunQuery={run}
            />
          </div>
          <h2 style={{ marginTop: 32 }}>Annotations: Flight SQL</h2>
          <div id="annotation-sql">
            <SQLAnnotationEditor
              datasource={sqlDS}
              query={annotationSQLQuery}
              onChange={setAnnotationSQLQuery}
              onRunQuery={run}
            />
          </div>
          <p id="versions">
            React {React.version}, @grafana/ui {grafanaUIVersion}
          </p>
        </section>
      </main>
    </ThemeContext.Provider>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
