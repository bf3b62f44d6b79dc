// Browser harness: mounts the real ConfigEditor and QueryEditor inside Grafana's theme, with a
// backend service that forwards resource calls to the harness server. The browser test drives
// the page and reads the saved state from window.quiverHarness.
import React, { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { from } from 'rxjs';
import { createTheme, DataSourceSettings } from '@grafana/data';
import { BackendSrv, BackendSrvRequest, FetchResponse, setBackendSrv } from '@grafana/runtime';
import { GlobalStyles, ThemeContext } from '@grafana/ui';

import { ConfigEditor } from '../../src/components/ConfigEditor';
import { QueryEditor } from '../../src/components/QueryEditor';
import { DataSource } from '../../src/datasource';
import { instanceSettings } from '../../src/testutil';
import { QuiverOptions, QuiverQuery, QuiverSecureJsonData } from '../../src/types';

type Options = DataSourceSettings<QuiverOptions, QuiverSecureJsonData>;

export interface HarnessState {
  options: Options;
  demoQuery: QuiverQuery;
  sqlQuery: QuiverQuery;
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
  const body = options.data === undefined ? undefined : JSON.stringify(options.data);
  const res = await fetch(url, { method: options.method ?? 'GET', body });
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
  const [runs, setRuns] = useState(0);
  useEffect(() => {
    snapshot = { options, demoQuery, sqlQuery, runs };
  }, [options, demoQuery, sqlQuery, runs]);
  const run = () => setRuns((n) => n + 1);
  return (
    <ThemeContext.Provider value={theme}>
      <GlobalStyles />
      <main style={{ padding: 16, display: 'grid', gridTemplateColumns: '1fr 1fr', gap: 32 }}>
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
        </section>
      </main>
    </ThemeContext.Provider>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
