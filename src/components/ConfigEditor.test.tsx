import React, { useState } from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DataSourceSettings } from '@grafana/data';

import { labels } from '../labels';
import { selectors } from '../selectors';
import { QuiverOptions, QuiverSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';
import { openPicker, optionLabel, pick, pickerInput } from './pickers.testutil';

type Options = DataSourceSettings<QuiverOptions, QuiverSecureJsonData>;

function makeOptions(jsonData: QuiverOptions = {}, secureJsonFields: Record<string, boolean> = {}): Options {
  return {
    id: 1,
    uid: 'quiver',
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
    jsonData,
    secureJsonFields,
    secureJsonData: {},
  };
}

/** Renders the editor the way Grafana does: a parent owns the options and passes every change back. */
function setup(initial: Options) {
  const changes: Options[] = [];
  function Host() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(next) => {
          changes.push(next);
          setOptions(next);
        }}
      />
    );
  }
  render(<Host />);
  const latest = () => changes[changes.length - 1];
  return { changes, latest };
}

function clickRadio(groupTestId: string, label: string) {
  fireEvent.click(within(screen.getByTestId(groupTestId)).getByLabelText(label));
}

/** The Reset button that SecretInput / SecretTextArea render next to a stored secret. */
function resetButtonOf(input: HTMLElement): HTMLElement {
  for (let el = input.parentElement; el; el = el.parentElement) {
    const buttons = within(el).queryAllByRole('button', { name: 'Reset' });
    if (buttons.length > 0) {
      return buttons[0];
    }
  }
  throw new Error('no Reset button near the secret field');
}

function levelInput(): HTMLInputElement {
  return within(screen.getByTestId(selectors.config.level)).getByRole('textbox') as HTMLInputElement;
}

describe('ConfigEditor compression', () => {
  it('shows the defaults: demo upstream, codec auto preferring CPU, no level', () => {
    setup(makeOptions());
    expect(within(screen.getByTestId(selectors.config.upstream)).getByLabelText('Demo')).toBeChecked();
    expect(within(screen.getByTestId(selectors.config.codec)).getByLabelText('auto')).toBeChecked();
    expect(within(screen.getByTestId(selectors.config.codecPreference)).getByLabelText('CPU')).toBeChecked();
    expect(screen.queryByTestId(selectors.config.level)).not.toBeInTheDocument();
    expect(screen.getByTestId(selectors.config.advisor)).toBeInTheDocument();
    expect(within(screen.getByTestId(selectors.config.replyFormat)).getByLabelText('Arrow')).toBeChecked();
  });

  it('resets the level into the range of the new codec', () => {
    const { latest } = setup(makeOptions({ codec: 'zstd', level: 19 }));
    expect(screen.getByTestId(selectors.config.levelEffective)).toHaveTextContent('best');

    clickRadio(selectors.config.codec, 'lz4');
    expect(latest().jsonData).toMatchObject({ codec: 'lz4', level: 0 });
    expect(levelInput().value).toBe('0');
    expect(screen.getByTestId(selectors.config.levelEffective)).toHaveTextContent('fast compressor');

    clickRadio(selectors.config.codec, 'none');
    expect(latest().jsonData.codec).toBe('none');
    expect(latest().jsonData.level).toBeUndefined();
    expect(screen.queryByTestId(selectors.config.level)).not.toBeInTheDocument();

    clickRadio(selectors.config.codec, 'zstd');
    expect(latest().jsonData).toMatchObject({ codec: 'zstd', level: 3 });
    expect(levelInput().value).toBe('3');

    clickRadio(selectors.config.codec, 'auto');
    expect(latest().jsonData.codec).toBe('auto');
    expect(latest().jsonData.level).toBeUndefined();
    expect(screen.queryByTestId(selectors.config.level)).not.toBeInTheDocument();
    clickRadio(selectors.config.codecPreference, 'Bytes');
    expect(latest().jsonData.codecPreference).toBe('bytes');
    clickRadio(selectors.config.replyFormat, 'As Grafana asks');
    expect(latest().jsonData.replyFormat).toBe('requested');
  });

  it('updates the level and what it becomes', () => {
    const { latest } = setup(makeOptions({ codec: 'zstd', level: 3 }));
    fireEvent.change(levelInput(), { target: { value: '7' } });
    expect(latest().jsonData.level).toBe(7);
    expect(screen.getByTestId(selectors.config.levelEffective)).toHaveTextContent('better compression (levels 6–9)');

    clickRadio(selectors.config.codec, 'lz4');
    fireEvent.change(levelInput(), { target: { value: '5' } });
    expect(latest().jsonData).toMatchObject({ codec: 'lz4', level: 5 });
    expect(screen.getByTestId(selectors.config.levelEffective)).toHaveTextContent('high compression, level 5');
  });

  it('highlights the cost line of the chosen codec', () => {
    setup(makeOptions({ codec: 'lz4' }));
    const help = screen.getByTestId(selectors.config.codecHelp);
    expect(help).toHaveTextContent('zstd: smallest frames');
    expect(help).toHaveTextContent('lz4: fast on both sides');
    expect(help).toHaveTextContent('auto (default): chooses none, lz4 or zstd per frame');
    expect(help).toHaveTextContent('none: no CPU spent');
  });
});

describe('ConfigEditor validation', () => {
  it('flags out-of-range values from saved settings', () => {
    setup(makeOptions({ codec: 'zstd', level: 30, minSavings: 0.95, maxSeries: 0, maxPoints: 2000000000 }));
    expect(screen.getByText('30 is not within 1 to 22 (zstd levels)')).toBeInTheDocument();
    expect(screen.getByText('0.95 is not within 0 to 0.9')).toBeInTheDocument();
    expect(screen.getByText('0 is not within 1 to 1000000 (frames)')).toBeInTheDocument();
    expect(screen.getByText('2000000000 is not within 1 to 1000000000 (rows)')).toBeInTheDocument();
  });

  it('flags values as they are typed and clears the message once fixed', () => {
    const { latest } = setup(makeOptions());
    const maxSeries = screen.getByTestId(selectors.config.maxSeries);
    fireEvent.change(maxSeries, { target: { value: '2.5' } });
    expect(latest().jsonData.maxSeries).toBe(2.5);
    expect(screen.getByText('2.5 is not a whole number')).toBeInTheDocument();
    fireEvent.change(maxSeries, { target: { value: '500' } });
    expect(screen.queryByText('2.5 is not a whole number')).not.toBeInTheDocument();
    fireEvent.change(maxSeries, { target: { value: '' } });
    expect(latest().jsonData.maxSeries).toBeUndefined();
  });

  it('requires a valid Flight SQL address and limits', () => {
    setup(makeOptions({ upstream: 'flightsql' }));
    expect(screen.getByText('Address is required for Flight SQL (host:port).')).toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.config.address), { target: { value: 'localhost' } });
    expect(screen.getByText('Address must be host:port, with a port from 1 to 65535.')).toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.config.address), { target: { value: 'localhost:31337' } });
    expect(screen.queryByText(/Address must be/)).not.toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.config.timeout), { target: { value: '0' } });
    expect(screen.getByText('0 is not within 1 to 3600 (seconds)')).toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.config.byteLimit), { target: { value: '100' } });
    expect(screen.getByText('100 is not within 1024 to 17179869184 (bytes)')).toBeInTheDocument();
  });
});

describe('ConfigEditor SQL dialect', () => {
  it('shows auto by default, lists auto first and stores the choice under jsonData.dialect', async () => {
    const { latest } = setup(makeOptions({ upstream: 'flightsql', address: 'h:1' }));
    expect(pickerInput(selectors.config.dialect)).toHaveValue('Auto');
    const options = await openPicker(selectors.config.dialect);
    const wanted = ['Auto', 'DataFusion', 'DuckDB', 'PostgreSQL', 'Dremio', 'MySQL', 'ANSI SQL'];
    expect(options).toHaveLength(wanted.length);
    expect(options.map(optionLabel)).toEqual(wanted);
    expect(options[2]).toHaveTextContent('DuckDB and servers that embed it');
    await pick(selectors.config.dialect, 'DuckDB');
    expect(latest().jsonData.dialect).toBe('duckdb');
    expect(pickerInput(selectors.config.dialect)).toHaveValue('DuckDB');
  });
});

describe('ConfigEditor secrets', () => {
  it('keeps every secret in secureJsonData and none in jsonData', async () => {
    const user = userEvent.setup();
    const { latest } = setup(makeOptions());
    const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });
    clickRadio(selectors.config.upstream, 'Flight SQL');
    type(selectors.config.address, 'flight.example.com:443');

    clickRadio(selectors.config.authType, 'Token');
    type(selectors.config.token, 'tok-SECRET-1');
    clickRadio(selectors.config.authType, 'User and password');
    type(selectors.config.username, 'alice');
    type(selectors.config.password, 'pw-SECRET-2');

    await user.click(screen.getByTestId(selectors.config.tlsEnabled));
    await user.click(screen.getByTestId(selectors.config.tlsAuthWithCACert));
    type(selectors.config.tlsCACert, 'ca-SECRET-3');
    await user.click(screen.getByTestId(selectors.config.tlsAuth));
    type(selectors.config.tlsClientCert, 'cert-SECRET-4');
    type(selectors.config.tlsClientKey, 'key-SECRET-5');
    type(selectors.config.tlsServerName, 'flight.internal');

    await user.click(screen.getByTestId(selectors.config.addHeader));
    type(selectors.config.headerName(1), 'x-tenant');
    type(selectors.config.headerValue(1), 'hdr-SECRET-6');

    const { jsonData, secureJsonData } = latest();
    expect(jsonData).toMatchObject({
      upstream: 'flightsql',
      address: 'flight.example.com:443',
      authType: 'password',
      username: 'alice',
      tlsEnabled: true,
      tlsAuthWithCACert: true,
      tlsAuth: true,
      tlsServerName: 'flight.internal',
      headerName1: 'x-tenant',
    });
    expect(secureJsonData).toEqual({
      token: 'tok-SECRET-1',
      password: 'pw-SECRET-2',
      tlsCACert: 'ca-SECRET-3',
      tlsClientCert: 'cert-SECRET-4',
      tlsClientKey: 'key-SECRET-5',
      headerValue1: 'hdr-SECRET-6',
    });
    const plain = JSON.stringify(jsonData);
    expect(plain).not.toMatch(/SECRET/);
    for (const key of ['token', 'password', 'tlsCACert', 'tlsClientCert', 'tlsClientKey', 'headerValue1']) {
      expect(jsonData).not.toHaveProperty(key);
    }
  });

  it('shows stored secrets as configured and resets them without reading them', async () => {
    const user = userEvent.setup();
    const { latest } = setup(
      makeOptions(
        { upstream: 'flightsql', address: 'h:1', authType: 'token', headerName2: 'x-a' },
        {
          token: true,
          headerValue2: true,
        }
      )
    );
    const token = screen.getByTestId(selectors.config.token);
    expect(token).toBeDisabled();
    expect(token).toHaveValue('configured');
    expect(screen.queryByText('Token is required for token authentication.')).not.toBeInTheDocument();

    await user.click(resetButtonOf(token));
    expect(latest().secureJsonFields.token).toBe(false);
    expect(latest().secureJsonData?.token).toBe('');
    expect(screen.getByText('Token is required for token authentication.')).toBeInTheDocument();
    // the header row keeps index 2: its stored value belongs to that index
    expect(screen.getByTestId(selectors.config.headerName(2))).toHaveValue('x-a');
  });

  it('removes a header without renumbering the others', async () => {
    const user = userEvent.setup();
    const { latest } = setup(
      makeOptions(
        { upstream: 'flightsql', address: 'h:1', headerName1: 'x-a', headerName2: 'x-b' },
        {
          headerValue1: true,
          headerValue2: true,
        }
      )
    );
    await act(async () => {
      await user.click(screen.getByTestId(selectors.config.headerRemove(1)));
    });
    expect(latest().jsonData).not.toHaveProperty('headerName1');
    expect(latest().jsonData.headerName2).toBe('x-b');
    expect(latest().secureJsonFields).toMatchObject({ headerValue1: false, headerValue2: true });
    expect(latest().secureJsonData).toEqual({ headerValue1: '' });
    expect(screen.queryByTestId(selectors.config.headerName(1))).not.toBeInTheDocument();

    await user.click(screen.getByTestId(selectors.config.addHeader));
    expect(latest().jsonData.headerName3).toBe('');
  });
});

describe('ConfigEditor forward OAuth identity', () => {
  it('is off by default and turns jsonData.oauthPassThru on and off, keeping the credentials', async () => {
    const user = userEvent.setup();
    const { latest } = setup(
      makeOptions({ upstream: 'flightsql', address: 'h:1', authType: 'token' }, { token: true })
    );
    const toggle = screen.getByTestId(selectors.config.oauthPassThru);
    expect(toggle).not.toBeChecked();
    expect(screen.getByText('Forward OAuth identity')).toBeInTheDocument();

    await user.click(toggle);
    expect(latest().jsonData).toMatchObject({ authType: 'token', oauthPassThru: true });
    expect(latest().secureJsonFields).toEqual({ token: true });
    expect(screen.getByTestId(selectors.config.token)).toBeInTheDocument();

    await user.click(screen.getByTestId(selectors.config.oauthPassThru));
    expect(latest().jsonData.oauthPassThru).toBe(false);
  });

  it('shows a stored setting as on', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1', oauthPassThru: true }));
    expect(screen.getByTestId(selectors.config.oauthPassThru)).toBeChecked();
  });

  it('asks what a call without a signed-in user gets only while it is on, refusing by default', async () => {
    const user = userEvent.setup();
    const { latest } = setup(
      makeOptions({ upstream: 'flightsql', address: 'h:1', authType: 'token' }, { token: true })
    );
    expect(screen.queryByTestId(selectors.config.noForwardedIdentity)).not.toBeInTheDocument();

    await user.click(screen.getByTestId(selectors.config.oauthPassThru));
    const rule = screen.getByTestId(selectors.config.noForwardedIdentity);
    expect(within(rule).getByLabelText('Refuse')).toBeChecked();
    expect(screen.getByText(/no signed-in user to forward/)).toBeInTheDocument();

    await user.click(within(rule).getByLabelText('Use the configured credentials'));
    expect(latest().jsonData).toMatchObject({ oauthPassThru: true, noForwardedIdentity: 'configured' });
  });
});

describe('ConfigEditor endpoint location hosts', () => {
  it('edits jsonData.allowedLocationHosts under the address', async () => {
    const user = userEvent.setup();
    const { latest } = setup(makeOptions({ upstream: 'flightsql', address: 'h:1' }));
    const input = screen.getByTestId(selectors.config.allowedLocationHosts);
    expect(input).toHaveValue('');
    await user.type(input, 'd1.example');
    expect(latest().jsonData.allowedLocationHosts).toBe('d1.example');
  });
});

describe('ConfigEditor layout', () => {
  const headings = () => screen.getAllByRole('heading', { level: 3 }).map((h) => h.textContent);

  it('opens with the description and shows Connection, Compression and Limits for the demo source', () => {
    setup(makeOptions());
    expect(screen.getByText(/Arrow frames compressed with zstd or lz4/)).toBeInTheDocument();
    expect(screen.getByRole('link', { name: /Documentation/ })).toHaveAttribute(
      'href',
      'https://github.com/quiverdata/quiver#readme'
    );
    expect(headings()).toEqual(['Connection', 'Compression', 'Limits']);
    expect(screen.queryByText('Fields marked with * are required.')).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.config.rowLimit)).not.toBeInTheDocument();
  });

  it('adds Authentication, TLS, Result cache and Advanced for Flight SQL, with sub-sections and descriptions', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1', tlsEnabled: true }));
    expect(headings()).toEqual([
      'Connection',
      'Authentication',
      'TLS',
      'Compression',
      'Limits',
      'Result cache',
      'Advanced',
    ]);
    const subheadings = screen.getAllByRole('heading', { level: 6 }).map((h) => h.textContent);
    expect(subheadings).toEqual(['Server certificate', 'Client certificate', 'Codec advisor', 'Metadata headers']);
    expect(screen.getByText('Fields marked with * are required.')).toBeInTheDocument();
    // the former tooltips are descriptions under the labels now
    expect(screen.getByText(labels.flightsql.address.description)).toBeInTheDocument();
    expect(screen.getByText(labels.flightsql.rowLimit.tooltip)).toBeInTheDocument();
  });

  it('collapses and expands the Advanced section', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1' }));
    expect(screen.getByTestId(selectors.config.catalog)).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Collapse section' }));
    expect(screen.queryByTestId(selectors.config.catalog)).not.toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Expand section' }));
    expect(screen.getByTestId(selectors.config.catalog)).toBeInTheDocument();
  });
});

describe('ConfigEditor incremental queries', () => {
  it('is on by default, turns jsonData.incrementalQueries off, and edits the overlap, the panel notice and the cache size', async () => {
    const user = userEvent.setup();
    const { latest } = setup(makeOptions({ upstream: 'flightsql', address: 'h:1' }));
    const toggle = screen.getByTestId(selectors.config.incrementalQueries);
    expect(toggle).toBeChecked();

    fireEvent.change(screen.getByTestId(selectors.config.incrementalOverlap), { target: { value: '600' } });
    expect(latest().jsonData.incrementalOverlap).toBe(600);
    fireEvent.change(screen.getByTestId(selectors.config.resultCacheBytes), { target: { value: '1024' } });
    expect(latest().jsonData.resultCacheBytes).toBe(1024);
    expect(screen.getByText('1024 is not within 1048576 to 17179869184 (bytes)')).toBeInTheDocument();
    const notice = screen.getByTestId(selectors.config.incrementalNotice);
    expect(notice).not.toBeChecked();
    await user.click(notice);
    expect(latest().jsonData.incrementalNotice).toBe(true);

    await user.click(toggle);
    expect(latest().jsonData.incrementalQueries).toBe(false);
  });

  it('keeps the cache in Redis once an address is set: TLS, user, password (a secret), prefix and time to live', async () => {
    const user = userEvent.setup();
    const { latest } = setup(makeOptions({ upstream: 'flightsql', address: 'h:1' }));
    expect(screen.queryByTestId(selectors.config.redisPassword)).not.toBeInTheDocument();
    fireEvent.change(screen.getByTestId(selectors.config.redisAddress), { target: { value: 'redis:6379' } });
    expect(latest().jsonData.redisAddress).toBe('redis:6379');
    expect(screen.queryByTestId(selectors.config.resultCacheBytes)).not.toBeInTheDocument();
    await user.click(screen.getByTestId(selectors.config.redisTLS));
    expect(latest().jsonData.redisTLS).toBe(true);
    fireEvent.change(screen.getByTestId(selectors.config.redisPassword), { target: { value: 's3cret' } });
    expect(latest().secureJsonData).toMatchObject({ redisPassword: 's3cret' });
    expect(latest().jsonData).not.toHaveProperty('redisPassword');
    fireEvent.change(screen.getByTestId(selectors.config.redisTTL), { target: { value: '5' } });
    expect(screen.getByText('5 is not within 10 to 2592000 (seconds)')).toBeInTheDocument();
  });

  it('hides the cache settings while incremental queries are off', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1', incrementalQueries: false }));
    expect(screen.getByTestId(selectors.config.incrementalQueries)).not.toBeChecked();
    expect(screen.queryByTestId(selectors.config.incrementalOverlap)).not.toBeInTheDocument();
  });

  it('is not shown for the demo source', () => {
    setup(makeOptions({ upstream: 'demo' }));
    expect(screen.queryByTestId(selectors.config.incrementalQueries)).not.toBeInTheDocument();
  });

  it('shows a hidden setting while its value is wrong, for the health check reports it', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1', redisTTL: 5, incrementalQueries: false }));
    expect(screen.getByTestId(selectors.config.redisTTL)).toBeInTheDocument();
    expect(screen.getByText('5 is not within 10 to 2592000 (seconds)')).toBeInTheDocument();
    expect(screen.queryByTestId(selectors.config.incrementalOverlap)).not.toBeInTheDocument();
  });

  it('shows a hidden Redis address while it is not host:port', () => {
    setup(makeOptions({ upstream: 'flightsql', address: 'h:1', redisAddress: 'redis', incrementalQueries: false }));
    expect(screen.getByTestId(selectors.config.redisAddress)).toBeInTheDocument();
    expect(screen.getByText(labels.errors.redisAddressFormat)).toBeInTheDocument();
  });
});

describe('ConfigEditor with settings stored by provisioning', () => {
  it('reads " flightsql " and "" as the backend does and does not fail on a number where text belongs', () => {
    const stored = {
      upstream: ' flightsql ',
      address: 'h:1',
      dialect: ' DuckDB ',
      authType: 'password',
      username: 12345,
    };
    setup(makeOptions(stored as unknown as QuiverOptions));
    expect(screen.getByTestId(selectors.config.address)).toBeInTheDocument();
    expect(screen.queryByText(/is not one of/)).not.toBeInTheDocument();
    expect(screen.queryByText(labels.errors.usernameRequired)).not.toBeInTheDocument();
  });

  it('says under a switch stored as text that it is not true or false, until it is switched', () => {
    const { latest } = setup(
      makeOptions({ upstream: 'flightsql', address: 'h:1', tlsEnabled: 'false' } as unknown as QuiverOptions)
    );
    expect(screen.getByText('"false" is not true or false')).toBeInTheDocument();
    fireEvent.click(screen.getByTestId(selectors.config.tlsEnabled));
    expect(latest().jsonData.tlsEnabled).toBe(false);
    expect(screen.queryByText(/is not true or false/)).not.toBeInTheDocument();
  });

  it('shows the demo page alone for an empty upstream', () => {
    setup(makeOptions({ upstream: '' } as unknown as QuiverOptions));
    expect(screen.queryByTestId(selectors.config.address)).not.toBeInTheDocument();
    expect(screen.queryByTestId(selectors.config.incrementalQueries)).not.toBeInTheDocument();
  });
});
