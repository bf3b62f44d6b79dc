/** Every user-facing string of the editors, in one place. */
export const labels = {
  upstream: {
    section: 'Upstream',
    description: 'Where this data source reads its data from.',
    label: 'Source',
    demo: 'Demo',
    flightsql: 'Flight SQL',
    demoHelp:
      'The demo source generates deterministic random walks, logs and tables inside the plugin. It needs no settings.',
  },
  flightsql: {
    address: {
      label: 'Address',
      description: 'Flight SQL server as host:port.',
      placeholder: 'localhost:31337',
    },
    tls: {
      section: 'TLS',
      enabled: 'Use TLS',
      enabledTooltip: 'Connect to the server over TLS.',
      skipVerify: 'Skip TLS verification (unsafe)',
      skipVerifyWarning:
        'The server certificate is not checked: anyone between Grafana and the server can read and change the data. Use only for testing.',
      withCACert: 'With CA certificate',
      withCACertTooltip: 'Verify the server certificate against this CA instead of the system roots.',
      caCert: 'CA certificate',
      caCertPlaceholder: 'Begins with -----BEGIN CERTIFICATE-----',
      clientAuth: 'Client certificate (mTLS)',
      clientAuthTooltip: 'Present a client certificate and key to the server.',
      clientCert: 'Client certificate',
      clientCertPlaceholder: 'Begins with -----BEGIN CERTIFICATE-----',
      clientKey: 'Client key',
      clientKeyPlaceholder: 'Begins with -----BEGIN PRIVATE KEY-----',
      serverName: 'Server name',
      serverNameTooltip: 'Name used to verify the server certificate (SNI) when it differs from the address host.',
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
      oauthPassThruTooltip:
        "Send the signed-in user's OAuth access token (and ID token, when there is one) to the server instead of the credentials below, on every query, health check and schema call that Grafana forwards them with. Calls without a forwarded user, such as alert rules without one, use the credentials below.",
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
    catalog: { label: 'Catalog', tooltip: 'Default catalog (optional).' },
    schema: { label: 'Schema', tooltip: 'Default schema (optional).' },
    dialect: {
      label: 'SQL dialect',
      tooltip:
        'How the macros ($__timeFilter, $__timeGroup, …) write SQL. Auto asks the server for its name; the health check says which dialect it chose.',
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
    timeout: { label: 'Timeout (s)', tooltip: 'Query timeout in seconds, 1–3600. Default 30.' },
    rowLimit: {
      label: 'Row limit',
      tooltip: 'Rows read per query, 1–100000000. Results beyond it are cut with a notice. Default 1000000.',
    },
    byteLimit: {
      label: 'Byte limit',
      tooltip: 'Bytes read per query, 1024–17179869184. Results beyond it are cut with a notice. Default 268435456.',
    },
  },
  compression: {
    section: 'Compression',
    description: 'How the record-batch bodies of each Arrow frame are compressed on the way to Grafana.',
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
      tooltip: 'Higher levels make smaller frames and cost more CPU.',
      effective: 'Effective:',
    },
    effective: {
      zstdFastest: 'fastest (levels 1–2)',
      zstdDefault: 'default (levels 3–5)',
      zstdBetter: 'better compression (levels 6–9)',
      zstdBest: 'best compression (levels 10–22)',
      lz4Fast: 'fast compressor (level 0)',
      lz4High: (level: number) => `high compression, level ${level}`,
      none: 'not compressed',
    },
    minSavings: {
      label: 'Minimum savings',
      tooltip:
        'A buffer is sent uncompressed unless compression saves at least this fraction of its size, 0–0.9. Default 0.1.',
    },
    compatibility:
      'Grafana reads zstd frames safely from version 10.3 and lz4 frames from version 8.4. Choose none for older servers.',
  },
  limits: {
    section: 'Limits',
    description: 'Caps on what one query may return.',
    maxSeries: { label: 'Max series', tooltip: 'Frames per query, 1–1000000. Default 10000.' },
    maxPoints: {
      label: 'Max points',
      tooltip: 'Rows per query summed over its frames, 1–1000000000. Default 10000000.',
    },
  },
  query: {
    scenario: 'Scenario',
    scenarios: { random_walk: 'Random walk', logs: 'Logs', table: 'Table' },
    seriesCount: 'Series',
    seriesCountTooltip: (max: number) => `Number of series, 1–${max}.`,
    seed: 'Seed',
    seedTooltip: 'Same seed, same data.',
    format: 'Format',
    formats: { time_series: 'Time series', table: 'Table', logs: 'Logs' },
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
  errors: {
    notANumber: (label: string) => `${label} must be a number.`,
    range: (label: string, min: number, max: number) => `${label} must be between ${min} and ${max}.`,
    integer: (label: string) => `${label} must be a whole number.`,
    oneOf: (label: string, values: string[]) => `${label} must be one of ${values.join(', ')}.`,
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
