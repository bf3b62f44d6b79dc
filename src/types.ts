import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

/** Where a data-source instance reads its data from (jsonData.upstream). */
export type Upstream = 'demo' | 'flightsql';

/** Body compression of the Arrow IPC frames (jsonData.codec); auto chooses per frame. */
export type Codec = 'auto' | 'zstd' | 'lz4' | 'none';

/** A codec that takes a level. */
export type LevelCodec = Exclude<Codec, 'none' | 'auto'>;

/** What codec auto optimises for (jsonData.codecPreference). */
export type CodecPreference = 'cpu' | 'bytes';

/** The format of a query reply's frames (jsonData.replyFormat). */
export type ReplyFormat = 'arrow' | 'json' | 'requested';

/** How the plugin authenticates to a Flight SQL server (jsonData.authType). */
export type AuthType = 'none' | 'token' | 'password';

/** What a call without a forwarded user gets while oauthPassThru is on. */
export type NoForwardedIdentity = 'refuse' | 'configured';

/**
 * How the Flight SQL macros write SQL (jsonData.dialect): auto picks from the server's name; the
 * others are pkg/settings' Dialects.
 */
export type Dialect = 'auto' | 'datafusion' | 'duckdb' | 'postgres' | 'dremio' | 'mysql' | 'ansi';

/** Demo generator scenario (query.scenario): series for panels; labels and events for variables and annotations. */
export type Scenario = 'random_walk' | 'logs' | 'table' | 'labels' | 'events';

/** A label every demo series carries, listed by the demo scenario "labels" (query.label). */
export type DemoLabel = 'host' | 'region' | 'job';

/** How a Flight SQL query is edited (query.editorMode): the visual builder or SQL. */
export type EditorMode = 'builder' | 'code';

/** Shape of a Flight SQL result (query.format). */
export type Format = 'time_series' | 'time_series_wide' | 'table' | 'logs';

/** Key of a custom gRPC metadata header name in jsonData: headerName1 … headerNameN. */
export type HeaderNameKey = `headerName${number}`;

/** Key of a custom gRPC metadata header value in secureJsonData: headerValue1 … headerValueN. */
export type HeaderValueKey = `headerValue${number}`;

/**
 * Plain settings of one data-source instance. Keys are identical to the Go `json:` tags of
 * pkg/settings. Nothing secret lives here.
 */
export interface QuiverOptions extends DataSourceJsonData {
  upstream?: Upstream;
  codec?: Codec;
  level?: number;
  codecPreference?: CodecPreference;
  replyFormat?: ReplyFormat;
  minSavings?: number;
  maxSeries?: number;
  maxPoints?: number;

  address?: string;
  tlsEnabled?: boolean;
  tlsSkipVerify?: boolean;
  tlsAuthWithCACert?: boolean;
  tlsAuth?: boolean;
  tlsServerName?: string;
  authType?: AuthType;
  username?: string;
  /** Send the user's forwarded OAuth identity instead of the configured credentials. */
  oauthPassThru?: boolean;
  noForwardedIdentity?: NoForwardedIdentity;
  /** Other hosts, comma-separated, that endpoint locations may name. */
  allowedLocationHosts?: string;
  catalog?: string;
  schema?: string;
  dialect?: Dialect;
  timeout?: number;
  rowLimit?: number;
  byteLimit?: number;
  /** Refreshes read only what is new (see the backend's incrementalQueries). */
  incrementalQueries?: boolean;
  incrementalOverlap?: number;
  resultCacheBytes?: number;
  /** Panels show their query's incremental stats as a header notice. */
  incrementalNotice?: boolean;
  /** Redis (or Valkey) that keeps the result cache instead of the plugin's memory. */
  redisAddress?: string;
  redisTLS?: boolean;
  redisUsername?: string;
  redisKeyPrefix?: string;
  redisTTL?: number;

  [key: HeaderNameKey]: string | undefined;
}

/** Secret settings: written once by the editor, stored encrypted, never sent back to the browser. */
export interface QuiverSecureJsonData {
  token?: string;
  password?: string;
  tlsCACert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  redisPassword?: string;

  [key: HeaderValueKey]: string | undefined;
}

/** Keys of the numeric settings the editor validates. */
export type NumericOption =
  | 'level'
  | 'minSavings'
  | 'maxSeries'
  | 'maxPoints'
  | 'timeout'
  | 'rowLimit'
  | 'byteLimit'
  | 'incrementalOverlap'
  | 'resultCacheBytes'
  | 'redisTTL';

/** One query. Demo queries use scenario/seriesCount/seed, Flight SQL queries use rawSql/format. */
export interface QuiverQuery extends DataQuery {
  scenario?: Scenario;
  seriesCount?: number;
  seed?: number;
  rawSql?: string;
  format?: Format;
  /** false: always a full query, never served from the result cache (the backend's "incremental"). */
  incremental?: boolean;
  /** Demo "labels" scenario: the label whose values are listed. */
  label?: DemoLabel;
  /** Flight SQL: the editor the query was last edited in; builder queries keep their model in `builder`. */
  editorMode?: EditorMode;
  builder?: BuilderModel;
}

/** Aggregations the query builder offers for a value column. */
export type Aggregation = 'none' | 'avg' | 'sum' | 'min' | 'max' | 'count';

/** Comparison operators of a builder filter. */
export type FilterOperator = '=' | '!=' | '<' | '<=' | '>' | '>=' | 'LIKE' | 'IN';

/** One value column of the builder: a column and the aggregation applied to it. */
export interface BuilderValue {
  column: string;
  aggregation: Aggregation;
}

/** One builder filter: column operator value; the value may hold dashboard variables. */
export interface BuilderFilter {
  column: string;
  operator: FilterOperator;
  value: string;
}

/** The query builder's model, kept in the query JSON so the builder can reopen it. */
export interface BuilderModel {
  table?: TableInfo;
  timeColumn?: string;
  values: BuilderValue[];
  groupBy: string[];
  filters: BuilderFilter[];
  /** Bucket the time column with $__timeGroup at this interval ('$__interval' or e.g. '5m'); none when empty. */
  timeBucket?: string;
  orderBy?: string;
  orderDir?: 'ASC' | 'DESC';
  limit?: number;
}

/** A table listed by the backend resource `GET tables`. */
export interface TableInfo {
  catalog?: string;
  schema?: string;
  name: string;
}

/** A column listed by the backend resource `GET columns`. */
export interface ColumnInfo {
  name: string;
  type: string;
}

/** The SQL dialect the backend writes macros in (resource `GET dialect`). */
export interface DialectInfo {
  dialect: string;
  setting: string;
  /** The character that quotes an identifier; an inner one is doubled. */
  identifierQuote: string;
}
