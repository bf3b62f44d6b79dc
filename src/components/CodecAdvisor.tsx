import React, { useState } from 'react';
import { lastValueFrom } from 'rxjs';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { getBackendSrv } from '@grafana/runtime';
import { Alert, Button, InlineField, Input, RadioButtonGroup, TextArea, useStyles2 } from '@grafana/ui';

import { labels } from '../labels';
import { selectors } from '../selectors';
import { Codec, CodecPreference, QuiverOptions, Scenario, Upstream } from '../types';

/** One codec setting's figures, as the backend resource `POST advise` answers (pkg/plugin/advisor.go). */
export interface AdviseFigures {
  codec: Codec;
  level: number;
  codecPreference?: CodecPreference;
  wireBytes: number;
  ratio: number;
  encodeMicrosPerFrame: number;
  decodeMicrosPerFrame: number;
  totalMicrosPerFrame: number;
  buffersCompressed: number;
  buffersRaw: number;
  buffersSkipped: number;
  framesAs: Record<string, number>;
}

export interface AdviseResult {
  frames: number;
  rows: number;
  settings: AdviseFigures[];
}

export interface Props {
  /** The data source's uid: the advisor runs with its saved settings. */
  uid: string;
  upstream: Upstream;
  /** Called with the jsonData patch of the setting the administrator picks. */
  onUse: (patch: Partial<QuiverOptions>) => void;
}

const scenarioOptions: Array<{ label: string; value: Scenario }> = [
  { label: 'random_walk', value: 'random_walk' },
  { label: 'logs', value: 'logs' },
  { label: 'table', value: 'table' },
];

const rangeOptions = [
  { label: '1h', value: 3600_000 },
  { label: '6h', value: 6 * 3600_000 },
  { label: '24h', value: 24 * 3600_000 },
];

/** The name of a setting, as the table and the selectors show it: "auto cpu", "zstd 3", "none". */
export function settingName(f: Pick<AdviseFigures, 'codec' | 'level' | 'codecPreference'>): string {
  switch (f.codec) {
    case 'auto':
      return `auto ${f.codecPreference ?? 'cpu'}`;
    case 'none':
      return 'none';
    default:
      return `${f.codec} ${f.level}`;
  }
}

/** The jsonData patch that selects a setting. */
export function settingPatch(f: AdviseFigures): Partial<QuiverOptions> {
  if (f.codec === 'auto') {
    return { codec: 'auto', level: undefined, codecPreference: f.codecPreference ?? 'cpu' };
  }
  if (f.codec === 'none') {
    return { codec: 'none', level: undefined };
  }
  return { codec: f.codec, level: f.level };
}

function formatBytes(n: number): string {
  if (n >= 1 << 20) {
    return `${(n / (1 << 20)).toFixed(2)} MiB`;
  }
  if (n >= 1 << 10) {
    return `${(n / (1 << 10)).toFixed(1)} KiB`;
  }
  return `${n} B`;
}

const round = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

/**
 * The codec advisor of the Compression section: measures a query the administrator gives under every codec
 * setting (backend resource `POST advise`) and shows wire bytes, plugin encode and Grafana decode time per
 * frame as a table and a small bar chart, with "Use this setting" filling codec and level.
 */
export function CodecAdvisor({ uid, upstream, onUse }: Props) {
  const styles = useStyles2(getStyles);
  const [scenario, setScenario] = useState<Scenario>('random_walk');
  const [seriesCount, setSeriesCount] = useState(100);
  const [sql, setSql] = useState('');
  const [range, setRange] = useState(rangeOptions[0].value);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [result, setResult] = useState<AdviseResult | undefined>();

  const measure = async () => {
    setBusy(true);
    setError(undefined);
    const to = Date.now();
    const query = upstream === 'flightsql' ? { rawSql: sql, format: 'table' } : { scenario, seriesCount };
    try {
      const res = await lastValueFrom(
        getBackendSrv().fetch<AdviseResult>({
          url: `/api/datasources/uid/${encodeURIComponent(uid)}/resources/advise`,
          method: 'POST',
          data: { query, from: to - range, to, maxDataPoints: 1000 },
          showErrorAlert: false,
        })
      );
      setResult(res.data);
    } catch (e: unknown) {
      setResult(undefined);
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const maxTotal = Math.max(1, ...(result?.settings.map((s) => s.totalMicrosPerFrame) ?? []));
  const maxWire = Math.max(1, ...(result?.settings.map((s) => s.wireBytes) ?? []));

  return (
    <div className={styles.root} data-testid={selectors.config.advisor}>
      <h6>{labels.compression.advisor.title}</h6>
      <p className={styles.description}>{labels.compression.advisor.description}</p>
      {upstream === 'flightsql' ? (
        <InlineField label={labels.compression.advisor.sql} labelWidth={24} grow>
          <TextArea value={sql} rows={3} onChange={(e) => setSql(e.currentTarget.value)} placeholder="SELECT …" />
        </InlineField>
      ) : (
        <>
          <InlineField label={labels.compression.advisor.scenario} labelWidth={24}>
            <RadioButtonGroup<Scenario> options={scenarioOptions} value={scenario} onChange={setScenario} />
          </InlineField>
          <InlineField label={labels.compression.advisor.seriesCount} labelWidth={24}>
            <Input
              type="number"
              width={12}
              min={1}
              max={1000}
              value={seriesCount}
              onChange={(e) => setSeriesCount(Number(e.currentTarget.value))}
            />
          </InlineField>
        </>
      )}
      <InlineField label={labels.compression.advisor.range} labelWidth={24}>
        <RadioButtonGroup<number> options={rangeOptions} value={range} onChange={setRange} />
      </InlineField>
      <Button
        data-testid={selectors.config.advisorMeasure}
        onClick={measure}
        disabled={busy || !uid || (upstream === 'flightsql' && sql.trim() === '')}
        icon={busy ? 'spinner' : 'bolt'}
      >
        {busy ? labels.compression.advisor.measuring : labels.compression.advisor.measure}
      </Button>
      {error && (
        <Alert severity="error" title={labels.compression.advisor.failed} data-testid={selectors.config.advisorError}>
          {error}
        </Alert>
      )}
      {result && (
        <>
          <p className={styles.description}>{labels.compression.advisor.summary(result.frames, result.rows)}</p>
          <div className={styles.scroll}>
            <table className={styles.table}>
              <thead>
                <tr>
                  <th>{labels.compression.advisor.columns.setting}</th>
                  <th>{labels.compression.advisor.columns.wire}</th>
                  <th>{labels.compression.advisor.columns.ratio}</th>
                  <th>{labels.compression.advisor.columns.encode}</th>
                  <th>{labels.compression.advisor.columns.decode}</th>
                  <th>{labels.compression.advisor.columns.total}</th>
                  <th>{labels.compression.advisor.columns.buffers}</th>
                  <th>{labels.compression.advisor.columns.framesAs}</th>
                  <th title={labels.compression.advisor.chartTitle}>{labels.compression.advisor.chart}</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {result.settings.map((f) => {
                  const name = settingName(f);
                  return (
                    <tr key={name} data-testid={selectors.config.advisorRow(name)}>
                      <td>{name}</td>
                      <td>{formatBytes(f.wireBytes)}</td>
                      <td>{f.ratio.toFixed(2)}×</td>
                      <td>{round(f.encodeMicrosPerFrame)}</td>
                      <td>{round(f.decodeMicrosPerFrame)}</td>
                      <td>{round(f.totalMicrosPerFrame)}</td>
                      <td>
                        {f.buffersCompressed} / {f.buffersRaw} / {f.buffersSkipped}
                      </td>
                      <td>
                        {Object.entries(f.framesAs)
                          .filter(([, n]) => n > 0)
                          .map(([c, n]) => `${c} ${n}`)
                          .join(', ')}
                      </td>
                      <td className={styles.chartCell}>
                        <div
                          className={styles.barCPU}
                          style={{ width: `${(100 * f.totalMicrosPerFrame) / maxTotal}%` }}
                          title={`${round(f.totalMicrosPerFrame)} µs/frame`}
                        />
                        <div
                          className={styles.barBytes}
                          style={{ width: `${(100 * f.wireBytes) / maxWire}%` }}
                          title={formatBytes(f.wireBytes)}
                        />
                      </td>
                      <td>
                        <Button
                          size="sm"
                          variant="secondary"
                          data-testid={selectors.config.advisorUse(name)}
                          onClick={() => onUse(settingPatch(f))}
                        >
                          {labels.compression.advisor.use}
                        </Button>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
    </div>
  );
}

/** The message of a failed resource call: the backend's {"error": …}, or the error's own text. */
function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const data = (e as { data?: unknown }).data;
    if (typeof data === 'object' && data !== null && typeof (data as { error?: unknown }).error === 'string') {
      return (data as { error: string }).error;
    }
    if (typeof (e as { message?: unknown }).message === 'string') {
      return (e as { message: string }).message;
    }
  }
  return String(e);
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ marginTop: theme.spacing(2) }),
  description: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(1) }),
  scroll: css({ maxWidth: '100%', overflowX: 'auto', marginTop: theme.spacing(1) }),
  table: css({
    fontSize: theme.typography.bodySmall.fontSize,
    'th, td': { padding: theme.spacing(0.5, 1), textAlign: 'left', whiteSpace: 'nowrap' },
    'tbody tr:nth-child(odd)': { background: theme.colors.background.secondary },
  }),
  chartCell: css({ minWidth: 120 }),
  barCPU: css({ height: 6, background: theme.colors.primary.main, marginBottom: 2 }),
  barBytes: css({ height: 6, background: theme.colors.warning.main }),
});
