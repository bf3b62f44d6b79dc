import { settings } from './generated/settings';

/**
 * Every user-facing string of the editors, in one place. What a setting does, accepts and defaults to comes from
 * the backend's settings table (src/generated/settings.ts), so tooltips and the health check say the same.
 */
export const labels = {
  header: {
    title: 'Quiver',
    description:
      'Arrow frames compressed with zstd or lz4, from the built-in demo generator or an Apache Arrow Flight SQL server. Configure the source below; the health check (Save & test) names any setting that is wrong.',
    required: 'Fields marked with * are required.',
    docs: 'Documentation',
  },
  sections: {
    connection: 'Connection',
    connectionDescription: 'Where this data source reads its data from.',
    authentication: 'Authentication',
    authenticationDescription: 'How the plugin signs in to the Flight SQL server.',
    tls: 'TLS',
    tlsDescription: 'Encryption and certificates of the connection to the server.',
    advanced: 'Advanced',
    advancedDescription: 'Default catalog and schema, SQL dialect and custom gRPC metadata.',
    collapse: 'Collapse section',
    expand: 'Expand section',
  },
  upstream: {
    section: 'Upstream',
    description: settings.upstream.help,
    label: 'Source',
    demo: 'Demo',
    flightsql: 'Flight SQL',
    demoHelp:
      'The demo source generates deterministic random walks, logs and tables inside the plugin. It needs no settings.',
  },
  flightsql: {
    address: {
      label: 'Address',
      description: settings.address.help,
      placeholder: 'localhost:31337',
    },
    tls: {
      section: 'TLS',
      serverSection: 'Server certificate',
      clientSection: 'Client certificate',
      enabled: 'Use TLS',
      enabledTooltip: settings.tlsEnabled.help,
      skipVerify: 'Skip TLS verification (unsafe)',
      skipVerifyWarning: settings.tlsSkipVerify.help,
      withCACert: 'With CA certificate',
      withCACertTooltip: settings.tlsAuthWithCACert.help,
      caCert: 'CA certificate',
      caCertPlaceholder: 'Begins with -----BEGIN CERTIFICATE-----',
      clientAuth: 'Client certificate (mTLS)',
      clientAuthTooltip: settings.tlsAuth.help,
      clientCert: 'Client certificate',
      clientCertPlaceholder: 'Begins with -----BEGIN CERTIFICATE-----',
      clientKey: 'Client key',
      clientKeyPlaceholder: 'Begins with -----BEGIN PRIVATE KEY-----',
      serverName: 'Server name',
      serverNameTooltip: settings.tlsServerName.help,
    },
    auth: {
      section: 'Authentication',
      label: 'Method',
      none: 'None',
      token: 'Token',
      password: 'User and password',
      tokenLabel: 'Token',
      tokenPlaceholder: 'Bearer token',
      username: 'User',
      password_: 'Password',
      oauthPassThru: 'Forward OAuth identity',
      oauthPassThruTooltip: settings.oauthPassThru.help,
    },
    headers: {
      section: 'Metadata headers',
      description: 'Custom gRPC metadata sent with every call. Values are stored encrypted.',
      name: 'Name',
      value: 'Value',
      namePlaceholder: 'x-my-header',
      valuePlaceholder: 'Header value',
      add: 'Add header',
      remove: 'Remove header',
    },
    querySection: 'Queries',
    catalog: { label: 'Catalog', tooltip: settings.catalog.help },
    schema: { label: 'Schema', tooltip: settings.schema.help },
    dialect: {
      label: 'SQL dialect',
      tooltip: settings.dialect.description,
      options: {
        auto: { label: 'Auto', description: "Picked from the server's name (GetSqlInfo); ANSI when unknown" },
        datafusion: { label: 'DataFusion', description: 'InfluxDB 3, GreptimeDB and other DataFusion-based servers' },
        duckdb: { label: 'DuckDB', description: 'DuckDB and servers that embed it' },
        postgres: { label: 'PostgreSQL', description: 'PostgreSQL-compatible servers' },
        dremio: { label: 'Dremio', description: 'Dremio Software and Dremio Cloud' },
        mysql: { label: 'MySQL', description: 'Apache Doris, StarRocks and other MySQL-compatible servers' },
        ansi: { label: 'ANSI SQL', description: 'Generic fallback: no $__timeGroup' },
      },
    },
    timeout: { label: 'Timeout (s)', tooltip: settings.timeout.description },
    rowLimit: { label: 'Row limit', tooltip: settings.rowLimit.description },
    byteLimit: { label: 'Byte limit', tooltip: settings.byteLimit.description },
  },
  compression: {
    section: 'Compression',
    description: settings.codec.help,
    codec: 'Codec',
    codecHelp: {
      auto:
        'auto (default): chooses none, lz4 or zstd per frame by what it costs the plugin and Grafana. Time series go ' +
        'uncompressed (their values and timestamps hardly compress); text goes as lz4, or as zstd when bytes are preferred.',
      zstd:
        'zstd: smallest frames on text (log lines 3.7× at level 3, 4.4× at 7), but Grafana pays ~50 µs more per frame and ' +
        '~3 ns per byte to decode it (+60 % on a 256-point series, +90 % on log lines). Time series shrink only at ' +
        'steps of ~20 s or less. Level 19 costs ~6× the CPU of level 3.',
      lz4: 'lz4: fast on both sides (Grafana decodes log lines ~25 % slower than raw); log lines 2.6× smaller. Never shrinks a time series.',
      none: 'none: no CPU spent on either side; frames are as large as the data (16 bytes a point).',
    },
    preference: {
      label: 'Auto prefers',
      tooltip:
        'What codec auto saves first. CPU (default): Grafana runs next to the plugin; a byte is worth 4 ns of CPU, so text ' +
        'goes as lz4. Bytes: Grafana is far away or short of memory; a byte is worth 50 ns, so text and the timestamps zstd ' +
        'can shrink go as zstd.',
      options: { cpu: 'CPU', bytes: 'Bytes' },
    },
    advisor: {
      title: 'Codec advisor',
      description:
        "Runs a query with this data source's saved settings, encodes its frames under each codec setting and decodes " +
        "them with the Grafana SDK's decoder, as Grafana does. Save first if you changed the connection.",
      scenario: 'Demo scenario',
      seriesCount: 'Series',
      sql: 'SQL',
      range: 'Time range',
      measure: 'Measure',
      measuring: 'Measuring…',
      use: 'Use this setting',
      failed: 'Measuring failed:',
      summary: (frames: number, rows: number) => `${frames} frames, ${rows} rows`,
      columns: {
        setting: 'Setting',
        wire: 'Wire bytes',
        ratio: 'Ratio',
        encode: 'Encode µs/frame',
        decode: 'Decode µs/frame',
        total: 'Sum µs/frame',
        buffers: 'Buffers compressed / raw / skipped',
        framesAs: 'Frames sent as',
      },
      chart: 'CPU · bytes',
      chartTitle:
        'CPU per frame (plugin encode + Grafana decode, blue) and wire bytes (orange), relative to the largest',
    },
    level: {
      label: (codec: string) => `${codec} level`,
      tooltip: settings.level.description,
      effective: 'Effective:',
    },
    effective: {
      /** Words for what a level becomes, by pkg/codec's name of the encoder (Codec.Effective); undefined if unknown. */
      describe: (effective: string): string | undefined => {
        const names: Record<string, string> = {
          'zstd fastest': 'fastest',
          'zstd default': 'default',
          'zstd better': 'better compression',
          'zstd best': 'best compression',
          'lz4 fast': 'fast compressor',
        };
        const lz4 = /^lz4 level (\d+)$/.exec(effective);
        return names[effective] ?? (lz4 ? `high compression, level ${lz4[1]}` : undefined);
      },
      levels: (from: number, to: number) => `(levels ${from}–${to})`,
      none: 'not compressed',
    },
    minSavings: { label: 'Minimum savings', tooltip: settings.minSavings.description },
    compatibility:
      'Grafana reads zstd frames safely from version 10.3 and lz4 frames from version 8.4. Choose none for older servers.',
  },
  limits: {
    section: 'Limits',
    description: 'Caps on what one query may return.',
    maxSeries: { label: 'Max series', tooltip: settings.maxSeries.description },
    maxPoints: { label: 'Max points', tooltip: settings.maxPoints.description },
  },
  query: {
    scenario: 'Scenario',
    scenarios: { random_walk: 'Random walk', logs: 'Logs', table: 'Table', labels: 'Labels', events: 'Events' },
    seriesCount: 'Series',
    seriesCountTooltip: (max: number) => `Number of series, 1–${max}.`,
    seed: 'Seed',
    seedTooltip: 'Same seed, same data.',
    format: 'Format',
    formats: { time_series: 'Time series', time_series_wide: 'Time series (wide)', table: 'Table', logs: 'Logs' },
    sql: 'SQL',
    macros: 'Macros',
    macroHelp: [
      ['$__timeFilter(col)', 'col BETWEEN the dashboard time range start AND end'],
      ['$__timeFrom', 'start of the dashboard time range'],
      ['$__timeTo', 'end of the dashboard time range'],
      ['$__interval', 'the panel interval, e.g. 30s'],
      ['$__interval_ms', 'the panel interval in milliseconds'],
      ['$__timeGroup(col, interval)', 'col rounded down to the interval, for GROUP BY'],
    ] as ReadonlyArray<readonly [string, string]>,
    table: 'Table',
    tablePlaceholder: 'Browse tables',
    columns: 'Columns',
    insert: 'Insert',
    noSchema: 'Table and column hints are not available from this server.',
    seriesCountError: (max: number) => `Series must be a whole number from 1 to ${max}.`,
  },
  builder: {
    mode: { builder: 'Builder', code: 'Code' },
    table: 'Table',
    tablePlaceholder: 'Choose a table',
    timeColumn: 'Time column',
    timeColumnPlaceholder: 'None',
    timeColumnTooltip: 'Filtered to the dashboard time range and returned as "time".',
    bucket: 'Time bucket',
    bucketTooltip: 'Round the time column down with $__timeGroup, to aggregate per interval.',
    bucketNone: 'None',
    bucketInterval: 'Panel interval ($__interval)',
    values: 'Values',
    addValue: 'Add value',
    removeValue: 'Remove value',
    column: 'Column',
    aggregations: { none: 'No aggregation', avg: 'avg', sum: 'sum', min: 'min', max: 'max', count: 'count' },
    groupBy: 'Group by',
    groupByTooltip: 'Label columns: one series per combination of their values.',
    filters: 'Filters',
    addFilter: 'Add filter',
    removeFilter: 'Remove filter',
    filterValuePlaceholder: "value, $var or 'a','b' for IN",
    orderBy: 'Order by',
    orderByPlaceholder: 'Server order',
    limit: 'Limit',
    preview: 'SQL',
    noTables: 'The server lists no tables: write the SQL in the code editor.',
    switchTitle: 'Switch to the builder?',
    switchBody:
      'The SQL was changed in the code editor and no longer matches the builder. The builder will replace it with the query it builds.',
    switchConfirm: 'Discard the SQL and switch',
  },
  variable: {
    sql: 'Query',
    sqlHelp:
      "The values of the first column become the options; columns named __value and __text give values and texts apart. Macros and the time range work as in panels. For a searchable variable, filter with LIKE '$__searchFilter': it becomes what the user typed followed by %.",
    label: 'Label',
    labels: { host: 'Hosts', region: 'Regions', job: 'Jobs' },
    labelHelp: 'The demo source lists the values of this label over its first series.',
    seriesCount: 'Series',
    seriesCountTooltip: 'How many demo series to list the label of (hosts are host-1 … host-N).',
  },
  annotation: {
    sql: 'Query',
    sqlHelp:
      'Columns: time (or the first time column), timeEnd for a region, text (or the first text column), title, tags (a list, a JSON list or comma-separated text).',
    demoHelp: 'The demo source marks deploys (instants) and incidents (regions) on the hosts of its first series.',
    seriesCount: 'Hosts',
    seriesCountTooltip: 'Events are placed on the hosts of this many demo series.',
  },
  errors: {
    addressRequired: 'Address is required for Flight SQL (host:port).',
    addressFormat: 'Address must be host:port, with a port from 1 to 65535.',
    tokenRequired: 'Token is required for token authentication.',
    usernameRequired: 'User is required for user and password authentication.',
    passwordRequired: 'Password is required for user and password authentication.',
    caCertRequired: 'CA certificate is required when "With CA certificate" is on.',
    clientCertRequired: 'Client certificate is required for mTLS.',
    clientKeyRequired: 'Client key is required for mTLS.',
    headerNameRequired: 'Header name is required when a value is set.',
    headerNameFormat: 'Header names may contain only letters, digits, "-", "_" and ".".',
    headerNameDuplicate: 'Header name is used twice.',
    headerNameReserved: 'This header is set by gRPC or by the authentication settings.',
    headerValueRequired: 'Header value is required.',
  },
};
