import { labels } from './labels';
import {
  AuthType,
  Codec,
  CodecPreference,
  Dialect,
  LevelCodec,
  HeaderNameKey,
  HeaderValueKey,
  NumericOption,
  QuiverOptions,
  QuiverSecureJsonData,
  Upstream,
} from './types';

/** Defaults of the backend (pkg/settings) for keys that are absent from jsonData. */
export const defaults = {
  upstream: 'demo' as Upstream,
  codec: 'auto' as Codec,
  codecPreference: 'cpu' as CodecPreference,
  minSavings: 0.1,
  maxSeries: 10000,
  maxPoints: 10000000,
  authType: 'none' as AuthType,
  dialect: 'auto' as Dialect,
  timeout: 30,
  rowLimit: 1000000,
  byteLimit: 268435456,
} as const;

/** Accepted values of jsonData.dialect, auto first (the backend's settings.Dialects). */
export const dialects: Dialect[] = ['auto', 'datafusion', 'duckdb', 'postgres', 'dremio', 'mysql', 'ansi'];

/** Default level of each codec that has levels. */
export const defaultLevel: Record<LevelCodec, number> = { zstd: 3, lz4: 0 };

export interface Range {
  min: number;
  max: number;
  /** Whole numbers only. */
  integer: boolean;
}

/** Accepted level range of each codec that has levels. */
export const levelRange: Record<LevelCodec, Range> = {
  zstd: { min: 1, max: 22, integer: true },
  lz4: { min: 0, max: 9, integer: true },
};

/** Accepted ranges of the numeric settings other than level (same as the backend's Validate). */
export const ranges: Record<Exclude<NumericOption, 'level'>, Range> = {
  minSavings: { min: 0, max: 0.9, integer: false },
  maxSeries: { min: 1, max: 1000000, integer: true },
  maxPoints: { min: 1, max: 1000000000, integer: true },
  timeout: { min: 1, max: 3600, integer: true },
  rowLimit: { min: 1, max: 100000000, integer: true },
  byteLimit: { min: 1024, max: 17179869184, integer: true },
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
 * What a level effectively becomes in the backend's codecs.
 *
 * zstd levels are mapped the way klauspost/compress `zstd.EncoderLevelFromZstd` (v1.20.4) maps
 * them: below 3 → fastest, 3–5 → default, 6–9 → better compression, 10 and above → best
 * compression. lz4 level 0 is the fast compressor, 1–9 are pierrec/lz4 high-compression levels.
 */
export function effectiveLevel(codec: Codec, level: number): string {
  switch (codec) {
    case 'zstd':
      if (level < 3) {
        return labels.compression.effective.zstdFastest;
      }
      if (level < 6) {
        return labels.compression.effective.zstdDefault;
      }
      if (level < 10) {
        return labels.compression.effective.zstdBetter;
      }
      return labels.compression.effective.zstdBest;
    case 'lz4':
      return level === 0 ? labels.compression.effective.lz4Fast : labels.compression.effective.lz4High(level);
    default:
      return labels.compression.effective.none;
  }
}

/** Indexes N of the custom headers (headerNameN in jsonData or headerValueN stored as secret), ascending. */
export function headerIndexes(jsonData: QuiverOptions, secureJsonFields: Record<string, boolean> = {}): number[] {
  const found = new Set<number>();
  for (const key of Object.keys(jsonData)) {
    const m = /^headerName(\d+)$/.exec(key);
    if (m && jsonData[key as HeaderNameKey] !== undefined) {
      found.add(Number(m[1]));
    }
  }
  for (const [key, configured] of Object.entries(secureJsonFields)) {
    const m = /^headerValue(\d+)$/.exec(key);
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

function checkRange(errors: Errors, key: string, label: string, value: number | undefined, range: Range) {
  if (value === undefined) {
    return;
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    errors[key] = labels.errors.notANumber(label);
  } else if (value < range.min || value > range.max) {
    errors[key] = labels.errors.range(label, range.min, range.max);
  } else if (range.integer && !Number.isInteger(value)) {
    errors[key] = labels.errors.integer(label);
  }
}

const addressPattern = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):(\d{1,5})$/;
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
  const upstream = jsonData.upstream ?? defaults.upstream;
  if (upstream !== 'demo' && upstream !== 'flightsql') {
    errors.upstream = labels.errors.oneOf('Upstream', ['demo', 'flightsql']);
  }
  const codec = jsonData.codec ?? defaults.codec;
  if (codec !== 'auto' && codec !== 'zstd' && codec !== 'lz4' && codec !== 'none') {
    errors.codec = labels.errors.oneOf('Codec', ['auto', 'zstd', 'lz4', 'none']);
  } else if (hasLevel(codec)) {
    checkRange(errors, 'level', labels.compression.level.label(codec), jsonData.level, levelRange[codec]);
  }
  const preference = jsonData.codecPreference ?? defaults.codecPreference;
  if (preference !== 'cpu' && preference !== 'bytes') {
    errors.codecPreference = labels.errors.oneOf(labels.compression.preference.label, ['cpu', 'bytes']);
  }
  checkRange(errors, 'minSavings', labels.compression.minSavings.label, jsonData.minSavings, ranges.minSavings);
  checkRange(errors, 'maxSeries', labels.limits.maxSeries.label, jsonData.maxSeries, ranges.maxSeries);
  checkRange(errors, 'maxPoints', labels.limits.maxPoints.label, jsonData.maxPoints, ranges.maxPoints);

  if (upstream !== 'flightsql') {
    return errors;
  }

  const address = (jsonData.address ?? '').trim();
  if (address === '') {
    errors.address = labels.errors.addressRequired;
  } else {
    const m = addressPattern.exec(address);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) {
      errors.address = labels.errors.addressFormat;
    }
  }
  checkRange(errors, 'timeout', labels.flightsql.timeout.label, jsonData.timeout, ranges.timeout);
  checkRange(errors, 'rowLimit', labels.flightsql.rowLimit.label, jsonData.rowLimit, ranges.rowLimit);
  checkRange(errors, 'byteLimit', labels.flightsql.byteLimit.label, jsonData.byteLimit, ranges.byteLimit);

  const authType = jsonData.authType ?? defaults.authType;
  if (authType !== 'none' && authType !== 'token' && authType !== 'password') {
    errors.authType = labels.errors.oneOf('Authentication', ['none', 'token', 'password']);
  }
  const dialect = jsonData.dialect ?? defaults.dialect;
  if (!dialects.includes(dialect)) {
    errors.dialect = labels.errors.oneOf(labels.flightsql.dialect.label, dialects);
  }
  if (authType === 'token' && !hasSecret('token', secureJsonData, secureJsonFields)) {
    errors.token = labels.errors.tokenRequired;
  }
  if (authType === 'password') {
    if (!(jsonData.username ?? '').trim()) {
      errors.username = labels.errors.usernameRequired;
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
    const name = (jsonData[key] ?? '').trim().toLowerCase();
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
