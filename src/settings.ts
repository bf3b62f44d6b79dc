import { codecs, headerNumber, hostName, messages, settings, SettingSpec } from './generated/settings';
import { labels } from './labels';
import {
  AuthType,
  Codec,
  CodecPreference,
  Dialect,
  LevelCodec,
  NoForwardedIdentity,
  HeaderNameKey,
  HeaderValueKey,
  NumericOption,
  QuiverOptions,
  QuiverSecureJsonData,
  ReplyFormat,
  Upstream,
} from './types';

// Every default, range, accepted value and message template below comes from src/generated/settings.ts, which
// `go generate ./pkg/settings` writes from the backend's settings table (pkg/settings/table.go) and its codecs
// (pkg/codec). The type annotations fail to compile when the backend accepts a value src/types.ts does not know.

const upstreams: readonly Upstream[] = settings.upstream.values;
const codecNames: readonly Codec[] = settings.codec.values;

/** Defaults of the backend (pkg/settings) for keys that are absent from jsonData. */
export const defaults = {
  upstream: settings.upstream.default as Upstream,
  codec: settings.codec.default as Codec,
  codecPreference: settings.codecPreference.default as CodecPreference,
  replyFormat: settings.replyFormat.default as ReplyFormat,
  minSavings: settings.minSavings.default,
  maxSeries: settings.maxSeries.default,
  maxPoints: settings.maxPoints.default,
  authType: settings.authType.default as AuthType,
  noForwardedIdentity: settings.noForwardedIdentity.default as NoForwardedIdentity,
  dialect: settings.dialect.default as Dialect,
  timeout: settings.timeout.default,
  rowLimit: settings.rowLimit.default,
  byteLimit: settings.byteLimit.default,
  incrementalQueries: settings.incrementalQueries.default,
  incrementalOverlap: settings.incrementalOverlap.default,
  resultCacheBytes: settings.resultCacheBytes.default,
  incrementalNotice: settings.incrementalNotice.default,
  redisKeyPrefix: settings.redisKeyPrefix.default,
  redisTTL: settings.redisTTL.default,
} as const;

/** The settings with a fixed set of values. */
type Choice = 'upstream' | 'codec' | 'codecPreference' | 'replyFormat' | 'authType' | 'noForwardedIdentity' | 'dialect';

/** A string value as the backend reads it: trimmed, and lowercased, where the setting's spec says. */
function normalized(spec: SettingSpec, value: string): string {
  switch (spec.normalize) {
    case 'trim':
      return value.trim();
    case 'lower':
      return value.trim().toLowerCase();
  }
  return value;
}

/**
 * A setting with a fixed set of values as the backend reads it: normalized, and the default when it is absent,
 * null or "" (provisioning may store " flightsql "). A value outside the set is returned as it is, for validate
 * to report.
 */
export function choice<K extends Choice>(jsonData: QuiverOptions | undefined, key: K): NonNullable<QuiverOptions[K]> {
  const value: unknown = jsonData?.[key];
  const text = typeof value === 'string' ? normalized(settings[key], value) : '';
  return (text || defaults[key]) as NonNullable<QuiverOptions[K]>;
}

/** Accepted values of jsonData.dialect, auto first (the backend's settings.Dialects). */
export const dialects: readonly Dialect[] = settings.dialect.values;

function codecSpec(codec: LevelCodec) {
  const spec = codecs.find((c) => c.name === codec);
  if (!spec) {
    throw new Error(`codec ${codec} is not one of the backend's codecs`);
  }
  return spec;
}

/** Default level of each codec that has levels. */
export const defaultLevel: Record<LevelCodec, number> = {
  zstd: codecSpec('zstd').defaultLevel,
  lz4: codecSpec('lz4').defaultLevel,
};

export interface Range {
  min: number;
  max: number;
  /** Whole numbers only. */
  integer: boolean;
  /** What the number counts, for messages. */
  unit?: string;
}

/** Accepted level range of each codec that has levels. */
export const levelRange: Record<LevelCodec, Range> = {
  zstd: levelRangeOf('zstd'),
  lz4: levelRangeOf('lz4'),
};

function levelRangeOf(codec: LevelCodec): Range {
  const spec = codecSpec(codec);
  return { min: spec.minLevel, max: spec.maxLevel, integer: true, unit: `${codec} levels` };
}

function rangeOf(spec: SettingSpec): Range {
  return { min: spec.min ?? 0, max: spec.max ?? 0, integer: spec.type === 'integer', unit: spec.unit };
}

/** Accepted ranges of the numeric settings other than level (same as the backend's Validate). */
export const ranges: Record<Exclude<NumericOption, 'level'>, Range> = {
  minSavings: rangeOf(settings.minSavings),
  maxSeries: rangeOf(settings.maxSeries),
  maxPoints: rangeOf(settings.maxPoints),
  timeout: rangeOf(settings.timeout),
  rowLimit: rangeOf(settings.rowLimit),
  byteLimit: rangeOf(settings.byteLimit),
  incrementalOverlap: rangeOf(settings.incrementalOverlap),
  resultCacheBytes: rangeOf(settings.resultCacheBytes),
  redisTTL: rangeOf(settings.redisTTL),
};

/** Whether a codec takes a level (auto and none do not). */
export function hasLevel(codec: Codec): codec is LevelCodec {
  return codec === 'zstd' || codec === 'lz4';
}

/** The level a codec uses when jsonData.level is absent. Undefined for "none" and "auto". */
export function levelOrDefault(codec: Codec, level: number | undefined): number | undefined {
  if (!hasLevel(codec)) {
    return undefined;
  }
  return level ?? defaultLevel[codec];
}

/**
 * What a level effectively becomes in the backend's codecs: the run of levels that share one encoder
 * (pkg/codec's Codec.Effective), in the words of labels.compression.effective.
 */
export function effectiveLevel(codec: Codec, level: number): string {
  if (!hasLevel(codec)) {
    return labels.compression.effective.none;
  }
  const run = codecSpec(codec).effective.find((r) => level >= r.from && level <= r.to);
  if (!run) {
    return labels.compression.effective.none;
  }
  const text = labels.compression.effective.describe(run.effective) ?? run.effective;
  return run.from === run.to ? text : `${text} ${labels.compression.effective.levels(run.from, run.to)}`;
}

// The backend reads headerName1, headerName2, …; not headerName0 or headerName01.
const headerNameKeyPattern = new RegExp(`^headerName(${headerNumber})$`);
const headerValueKeyPattern = new RegExp(`^headerValue(${headerNumber})$`);

/** Indexes N of the custom headers (headerNameN in jsonData or headerValueN stored as secret), ascending. */
export function headerIndexes(jsonData: QuiverOptions, secureJsonFields: Record<string, boolean> = {}): number[] {
  const found = new Set<number>();
  for (const key of Object.keys(jsonData)) {
    const m = headerNameKeyPattern.exec(key);
    if (m && jsonData[key as HeaderNameKey] !== undefined) {
      found.add(Number(m[1]));
    }
  }
  for (const [key, configured] of Object.entries(secureJsonFields)) {
    const m = headerValueKeyPattern.exec(key);
    if (m && configured) {
      found.add(Number(m[1]));
    }
  }
  return [...found].sort((a, b) => a - b);
}

export function headerNameKey(n: number): HeaderNameKey {
  return `headerName${n}`;
}

export function headerValueKey(n: number): HeaderValueKey {
  return `headerValue${n}`;
}

/** Field key → message. Keys are jsonData keys, secret keys, or headerNameN. */
export type Errors = Partial<Record<string, string>>;

/** Fills a message template of the backend's ({value}, {min}, …). */
function fill(template: string, fields: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => fields[name] ?? whole);
}

/** A value in a message: quoted as the backend's strconv.Quote quotes printable text. */
function quote(value: string): string {
  return JSON.stringify(value);
}

/** The backend's message for a value outside range. */
function rangeMessage(value: number, range: Range): string {
  const m = fill(messages.range, { value: String(value), min: String(range.min), max: String(range.max) });
  return range.unit ? m + fill(messages.unit, { unit: range.unit }) : m;
}

/**
 * Checks a numeric setting the way the backend does: a number or a string holding one, a whole number when the
 * setting takes whole numbers, then the range. Messages are the backend's (src/generated/messages.json pins it).
 */
function checkNumber(errors: Errors, key: string, value: unknown, range: Range) {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    return;
  }
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    errors[key] = fill(range.integer ? messages.whole : messages.notANumber, { value: quote(String(value)) });
  } else if (range.integer && !Number.isInteger(n)) {
    errors[key] = fill(messages.whole, { value: String(n) });
  } else if (n < range.min || n > range.max) {
    errors[key] = rangeMessage(n, range);
  }
}

/** Checks a setting with a fixed set of values as the backend reads it; "", null and absent mean the default. */
function checkOneOf(errors: Errors, spec: SettingSpec, value: unknown, values: readonly string[]) {
  if (value === undefined || value === null) {
    return;
  }
  if (typeof value !== 'string') {
    errors[spec.key] = fill(messages.notAString, { value: quote(JSON.stringify(value)) });
    return;
  }
  const v = normalized(spec, value);
  if (v !== '' && !values.includes(v)) {
    errors[spec.key] = fill(messages.oneOf, { value: quote(v), values: values.map(quote).join(', ') });
  }
}

/** Checks a switch as the backend reads it: true or false; null, absent and blank text mean the default. */
function checkBool(errors: Errors, key: string, value: unknown) {
  if (value === undefined || value === null || typeof value === 'boolean') {
    return;
  }
  if (typeof value !== 'string' || value.trim() !== '') {
    errors[key] = fill(messages.notABool, { value: quote(typeof value === 'string' ? value : JSON.stringify(value)) });
  }
}

/** The table's checks (accepted values, ranges, switches) of every setting that upstream reads (undefined: every instance). */
function checkTable(errors: Errors, jsonData: QuiverOptions, upstream: Upstream | undefined) {
  const options = jsonData as Record<string, unknown>;
  for (const spec of Object.values(settings) as SettingSpec[]) {
    if (spec.upstream !== upstream) {
      continue;
    }
    const value = options[spec.key];
    if (spec.values) {
      checkOneOf(errors, spec, value, spec.values);
    } else if (spec.byCodec) {
      const codec = choice(jsonData, 'codec');
      if (codecNames.includes(codec) && hasLevel(codec)) {
        checkNumber(errors, spec.key, value, levelRange[codec]);
      }
    } else if (spec.max !== undefined) {
      checkNumber(errors, spec.key, value, rangeOf(spec));
    } else if (spec.type === 'boolean') {
      checkBool(errors, spec.key, value);
    }
  }
}

const addressPattern = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/@[\]]+):(\d{1,5})$/;

/** Whether a trimmed address is host:port with a port from 1 to 65535 (the backend's checkAddress). */
function isHostPort(address: string): boolean {
  const m = addressPattern.exec(address);
  const port = m ? Number(m[2]) : 0;
  return Boolean(m) && port >= 1 && port <= 65535;
}

// The backend's checkHost: a DNS host name, or an IP address (IPv6 with or without brackets).
const hostNamePattern = new RegExp(hostName);
const ipv6Pattern = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;

/** Whether an entry of allowedLocationHosts is one the backend accepts (an empty entry is no entry). */
function isHost(h: string): boolean {
  if (h === '') {
    return true;
  }
  if (h.includes('://')) {
    return false;
  }
  if (ipv6Pattern.test(h.replace(/^\[+|\]+$/g, ''))) {
    return true;
  }
  return !h.includes(':') && h.length <= 253 && hostNamePattern.test(h);
}

// gRPC metadata keys after lowercasing: letters, digits, '-', '_' and '.'.
const headerNamePattern = /^[0-9a-z_.-]+$/;
// Set by gRPC or by the authentication settings.
const reservedHeaders = ['authorization', 'content-type', 'user-agent', 'te'];

/** True when a secret is stored (secureJsonFields) or being entered now (secureJsonData). */
function hasSecret(
  key: keyof QuiverSecureJsonData,
  secureJsonData: QuiverSecureJsonData | undefined,
  secureJsonFields: Record<string, boolean> | undefined
): boolean {
  return Boolean(secureJsonFields?.[key]) || Boolean(secureJsonData?.[key]);
}

/**
 * Checks the settings with the same ranges as the backend, so a mistake is shown next to its field
 * before the health check runs. Returns an empty object when everything is valid.
 */
export function validate(
  jsonData: QuiverOptions,
  secureJsonData?: QuiverSecureJsonData,
  secureJsonFields?: Record<string, boolean>
): Errors {
  const errors: Errors = {};
  checkTable(errors, jsonData, undefined);
  const upstream = choice(jsonData, 'upstream');
  if (upstream !== 'flightsql' || !upstreams.includes(upstream)) {
    return errors;
  }
  checkTable(errors, jsonData, 'flightsql');

  const address = String(jsonData.address ?? '').trim();
  if (address === '') {
    errors.address = labels.errors.addressRequired;
  } else if (!isHostPort(address)) {
    errors.address = labels.errors.addressFormat;
  }
  if (
    !String(jsonData.allowedLocationHosts ?? '')
      .split(',')
      .every((h) => isHost(h.trim()))
  ) {
    errors.allowedLocationHosts = labels.errors.allowedLocationHostsFormat;
  }
  // Checked whether or not incremental queries are on, as the backend does: the editor then shows the field.
  const redisAddress = String(jsonData.redisAddress ?? '').trim();
  if (redisAddress !== '' && !isHostPort(redisAddress)) {
    errors.redisAddress = labels.errors.redisAddressFormat;
  }
  const authType = choice(jsonData, 'authType');
  if (authType === 'token' && !hasSecret('token', secureJsonData, secureJsonFields)) {
    errors.token = labels.errors.tokenRequired;
  }
  if (authType === 'password') {
    const username = String(jsonData.username ?? '');
    if (!username.trim()) {
      errors.username = labels.errors.usernameRequired;
    } else if (username.includes(':')) {
      errors.username = labels.errors.usernameColon;
    }
    if (!hasSecret('password', secureJsonData, secureJsonFields)) {
      errors.password = labels.errors.passwordRequired;
    }
  }

  if (jsonData.tlsEnabled) {
    if (jsonData.tlsAuthWithCACert && !hasSecret('tlsCACert', secureJsonData, secureJsonFields)) {
      errors.tlsCACert = labels.errors.caCertRequired;
    }
    if (jsonData.tlsAuth) {
      if (!hasSecret('tlsClientCert', secureJsonData, secureJsonFields)) {
        errors.tlsClientCert = labels.errors.clientCertRequired;
      }
      if (!hasSecret('tlsClientKey', secureJsonData, secureJsonFields)) {
        errors.tlsClientKey = labels.errors.clientKeyRequired;
      }
    }
  }

  const seen = new Set<string>();
  for (const n of headerIndexes(jsonData, secureJsonFields)) {
    const key = headerNameKey(n);
    const valueKey = headerValueKey(n);
    const name = String(jsonData[key] ?? '')
      .trim()
      .toLowerCase();
    const hasValue = hasSecret(valueKey, secureJsonData, secureJsonFields);
    if (name === '') {
      // The backend skips rows without a name; only a value without a name is a mistake.
      if (hasValue) {
        errors[key] = labels.errors.headerNameRequired;
      }
      continue;
    }
    if (!headerNamePattern.test(name)) {
      errors[key] = labels.errors.headerNameFormat;
    } else if (name.startsWith('grpc-') || reservedHeaders.includes(name)) {
      errors[key] = labels.errors.headerNameReserved;
    } else if (seen.has(name)) {
      errors[key] = labels.errors.headerNameDuplicate;
    }
    seen.add(name);
    if (!hasValue) {
      errors[valueKey] = labels.errors.headerValueRequired;
    }
  }
  return errors;
}
