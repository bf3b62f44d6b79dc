import { codecs, settings } from './generated/settings';
import backend from './generated/messages.json';
import { labels } from './labels';
import { defaults, dialects, effectiveLevel, headerIndexes, levelRange, ranges, validate } from './settings';
import { Dialect, QuiverOptions } from './types';

describe('messages agree with the backend', () => {
  // src/generated/messages.json holds, for out-of-range values of every numeric setting (and a bad value of
  // every setting with a fixed set, and of every switch), the message pkg/settings' Parse and Validate give; a
  // Go test regenerates it and fails when it is stale. The editor must show exactly that message at the key, and nothing else; a case
  // without a message is a value the backend accepts once it normalizes it (" DuckDB "), which the editor accepts too.
  it('covers every numeric setting and every switch', () => {
    const numeric = Object.values(settings)
      .filter((s) => s.type === 'integer' || s.type === 'number' || s.type === 'boolean')
      .map((s) => s.key);
    expect(new Set(backend.cases.map((c) => c.key))).toEqual(
      new Set([
        ...numeric,
        'upstream',
        'codec',
        'codecPreference',
        'replyFormat',
        'authType',
        'noForwardedIdentity',
        'dialect',
      ])
    );
  });

  it.each(backend.cases.map((c) => [c.key, JSON.stringify(c.jsonData), c.jsonData, c.message] as const))(
    '%s in %s',
    (key, _, jsonData, message) => {
      expect(validate(jsonData as QuiverOptions)).toEqual(message ? { [key]: message } : {});
    }
  );
});

describe('facts come from the backend table', () => {
  it('uses the generated defaults and ranges', () => {
    expect(defaults.timeout).toBe(settings.timeout.default);
    expect(ranges.byteLimit).toEqual({ min: 1024, max: 17179869184, integer: true, unit: 'bytes' });
    expect(levelRange.zstd).toMatchObject({ min: 1, max: 22 });
    expect(levelRange.lz4).toMatchObject({ min: 0, max: 9 });
  });

  it('has words for every encoder a level can become', () => {
    for (const codec of codecs) {
      for (const run of codec.effective) {
        expect(labels.compression.effective.describe(run.effective)).toBeDefined();
      }
    }
  });
});

describe('effectiveLevel', () => {
  // pkg/codec maps zstd levels with klauspost/compress zstd.EncoderLevelFromZstd: <3 fastest, 3–5 default,
  // 6–9 better, >=10 best (src/generated/settings.ts carries the runs).
  const zstd: Array<[number, string]> = [];
  for (let level = 1; level <= 22; level++) {
    const expected = level < 3 ? 'fastest' : level < 6 ? 'default' : level < 10 ? 'better' : 'best';
    zstd.push([level, expected]);
  }
  it.each(zstd)('zstd level %i is %s', (level, expected) => {
    expect(effectiveLevel('zstd', level)).toMatch(new RegExp(`^${expected}`));
  });

  it('lz4 level 0 is the fast compressor, 1–9 high compression', () => {
    expect(effectiveLevel('lz4', 0)).toMatch(/^fast/);
    for (let level = 1; level <= 9; level++) {
      expect(effectiveLevel('lz4', level)).toBe(`high compression, level ${level}`);
    }
  });
});

describe('validate', () => {
  it('accepts the defaults', () => {
    expect(validate({})).toEqual({});
  });

  it.each([
    [{ codec: 'zstd' as const, level: 0 }, 'level'],
    [{ codec: 'zstd' as const, level: 23 }, 'level'],
    [{ codec: 'zstd' as const, level: 2.5 }, 'level'],
    [{ codec: 'lz4' as const, level: 10 }, 'level'],
    [{ codec: 'lz4' as const, level: -1 }, 'level'],
    [{ minSavings: 0.95 }, 'minSavings'],
    [{ minSavings: -0.1 }, 'minSavings'],
    [{ maxSeries: 0 }, 'maxSeries'],
    [{ maxSeries: 1000001 }, 'maxSeries'],
    [{ maxPoints: 1000000001 }, 'maxPoints'],
  ])('flags %j at %s', (jsonData, key) => {
    expect(Object.keys(validate(jsonData))).toEqual([key]);
  });

  it('accepts the edges of every range', () => {
    expect(validate({ codec: 'zstd', level: 1, minSavings: 0, maxSeries: 1, maxPoints: 1 })).toEqual({});
    expect(validate({ codec: 'zstd', level: 22, minSavings: 0.9, maxSeries: 1000000, maxPoints: 1000000000 })).toEqual(
      {}
    );
    expect(validate({ codec: 'lz4', level: 0 })).toEqual({});
    expect(validate({ codec: 'lz4', level: 9 })).toEqual({});
    expect(validate({ codec: 'none', level: 99 })).toEqual({});
  });

  it('checks Flight SQL settings only for the Flight SQL upstream', () => {
    expect(validate({ upstream: 'demo', timeout: 0 })).toEqual({});
    const errors = validate({ upstream: 'flightsql', timeout: 0, rowLimit: 0, byteLimit: 1023 });
    expect(Object.keys(errors).sort()).toEqual(['address', 'byteLimit', 'rowLimit', 'timeout']);
  });

  it('accepts every dialect the backend does, auto first, and names the setting otherwise', () => {
    expect(dialects[0]).toBe('auto');
    for (const dialect of dialects) {
      expect(validate({ upstream: 'flightsql', address: 'h:1', dialect })).toEqual({});
    }
    const errors = validate({ upstream: 'flightsql', address: 'h:1', dialect: 'oracle' as Dialect });
    expect(errors).toEqual({
      dialect: '"oracle" is not one of "auto", "datafusion", "duckdb", "postgres", "dremio", "mysql", "ansi"',
    });
  });

  it.each([
    ['localhost:31337', true],
    ['10.0.0.1:443', true],
    ['[::1]:8815', true],
    ['flight.example.com:65535', true],
    ['localhost', false],
    ['localhost:0', false],
    ['localhost:65536', false],
    ['grpc://localhost:443', false],
    ['host :1', false],
  ])('address %s valid=%s', (address, ok) => {
    expect(validate({ upstream: 'flightsql', address }).address === undefined).toBe(ok);
  });

  it('requires the secrets of the chosen authentication and TLS options', () => {
    const base = { upstream: 'flightsql' as const, address: 'h:1' };
    expect(Object.keys(validate({ ...base, authType: 'token' }))).toEqual(['token']);
    expect(validate({ ...base, authType: 'token' }, {}, { token: true })).toEqual({});
    expect(validate({ ...base, authType: 'token' }, { token: 't' })).toEqual({});
    expect(Object.keys(validate({ ...base, authType: 'password' })).sort()).toEqual(['password', 'username']);
    expect(Object.keys(validate({ ...base, tlsEnabled: true, tlsAuthWithCACert: true, tlsAuth: true })).sort()).toEqual(
      ['tlsCACert', 'tlsClientCert', 'tlsClientKey']
    );
    // TLS sub-options do not matter while TLS is off.
    expect(validate({ ...base, tlsEnabled: false, tlsAuthWithCACert: true, tlsAuth: true })).toEqual({});
  });

  it('checks header names and values like the backend', () => {
    const base = { upstream: 'flightsql' as const, address: 'h:1' };
    const stored = { headerValue1: true, headerValue3: true };
    expect(validate({ ...base, headerName1: 'x-tenant', headerName3: 'X-Other' }, {}, stored)).toEqual({});
    // a row without a name is skipped by the backend unless it carries a value
    expect(validate({ ...base, headerName2: '' })).toEqual({});
    expect(Object.keys(validate({ ...base, headerName2: '' }, { headerValue2: 'v' }))).toEqual(['headerName2']);
    const errors = validate(
      {
        ...base,
        headerName2: 'bad name',
        headerName4: 'X-A',
        headerName5: 'x-a',
        headerName6: 'grpc-timeout',
        headerName7: 'Authorization',
        headerName8: 'x-b',
      },
      { headerValue2: 'v', headerValue4: 'v', headerValue5: 'v', headerValue6: 'v', headerValue7: 'v' }
    );
    expect(Object.keys(errors).sort()).toEqual([
      'headerName2',
      'headerName5',
      'headerName6',
      'headerName7',
      'headerValue8',
    ]);
  });

  // FlightSQL.Validate checks redisAddress (host:port) whether or not incremental queries are on.
  it('flags a Redis address that is not host:port', () => {
    const flightsql = { upstream: 'flightsql' as const, address: 'h:1' };
    expect(validate({ ...flightsql, redisAddress: 'redis' }).redisAddress).toBe(labels.errors.redisAddressFormat);
    expect(validate({ ...flightsql, redisAddress: 'redis://r:6379' }).redisAddress).toBeTruthy();
    expect(validate({ ...flightsql, redisAddress: 'default:secret@r:6379' }).redisAddress).toBeTruthy();
    expect(validate({ upstream: 'flightsql', address: 'user:secret@h:1' }).address).toBe(labels.errors.addressFormat);
    expect(validate({ ...flightsql, redisAddress: 'redis:6379' })).toEqual({});
  });

  // FlightSQL.Validate: `… is not a host: drop the scheme` and `… drop the port`.
  it('flags allowed location hosts with a scheme or a port', () => {
    const flightsql = { upstream: 'flightsql' as const, address: 'h:1' };
    expect(validate({ ...flightsql, allowedLocationHosts: 'https://d1.example' }).allowedLocationHosts).toBe(
      labels.errors.allowedLocationHostsFormat
    );
    expect(validate({ ...flightsql, allowedLocationHosts: 'd1.example:443' }).allowedLocationHosts).toBeTruthy();
    expect(validate({ ...flightsql, allowedLocationHosts: 'd1.example, 10.0.0.1, [::1], ::1, ' })).toEqual({});
  });

  it('flags a user name with ":", which basic authentication cannot carry', () => {
    const password = { upstream: 'flightsql' as const, address: 'h:1', authType: 'password' as const };
    expect(validate({ ...password, username: 'corp:alice' }, { password: 'p' })).toEqual({
      username: labels.errors.usernameColon,
    });
    expect(validate({ ...password, username: 'alice' }, { password: 'p' })).toEqual({});
  });
});

describe('headerIndexes', () => {
  it('collects indexes from names and stored values, in order', () => {
    expect(headerIndexes({ headerName3: 'a', headerName1: 'b' }, { headerValue7: true, headerValue2: false })).toEqual([
      1, 3, 7,
    ]);
  });

  it('skips the keys the backend does not read as headers', () => {
    const jsonData = { headerName0: 'a', headerName01: 'b', headerName2: 'c' } as QuiverOptions;
    expect(headerIndexes(jsonData, { headerValue0: true, headerValue007: true })).toEqual([2]);
  });
});
