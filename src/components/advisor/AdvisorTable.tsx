import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Button, useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { QuiverOptions } from '../../types';
import { AdviseResult, formatBytes, formatFramesAs, formatMicros, settingName, settingPatch } from './figures';

interface Props {
  result: AdviseResult;
  /** Called with the jsonData patch of the setting picked. */
  onUse: (patch: Partial<QuiverOptions>) => void;
}

const columns = labels.compression.advisor.columns;

/**
 * The advisor's figures, one row per setting, with bars of CPU and wire bytes relative to the largest. The
 * table scrolls sideways inside its own box rather than widen the settings page.
 */
export function AdvisorTable({ result, onUse }: Props) {
  const styles = useStyles2(getStyles);
  const maxTotal = Math.max(1, ...result.settings.map((s) => s.totalMicrosPerFrame));
  const maxWire = Math.max(1, ...result.settings.map((s) => s.wireBytes));
  return (
    <>
      <p className={styles.description}>{labels.compression.advisor.summary(result.frames, result.rows)}</p>
      <div className={styles.scroll}>
        <table className={styles.table}>
          <thead>
            <tr>
              <th>{columns.setting}</th>
              <th>{columns.wire}</th>
              <th>{columns.ratio}</th>
              <th>{columns.encode}</th>
              <th>{columns.decode}</th>
              <th>{columns.total}</th>
              <th>{columns.buffers}</th>
              <th>{columns.framesAs}</th>
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
                  <td>{formatMicros(f.encodeMicrosPerFrame)}</td>
                  <td>{formatMicros(f.decodeMicrosPerFrame)}</td>
                  <td>{formatMicros(f.totalMicrosPerFrame)}</td>
                  <td>
                    {f.buffersCompressed} / {f.buffersRaw} / {f.buffersSkipped}
                  </td>
                  <td>{formatFramesAs(f.framesAs)}</td>
                  <td className={styles.chartCell}>
                    <div
                      className={styles.barCPU}
                      style={{ width: `${(100 * f.totalMicrosPerFrame) / maxTotal}%` }}
                      title={`${formatMicros(f.totalMicrosPerFrame)} µs/frame`}
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
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  description: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(1) }),
  // A scroll box alone does not stop the table's width from widening the page (it still counts in the page's
  // min-content width, which a grid or flex parent honours): width 0 and min-width 100% take the box's width
  // from its container and none from the table, so the table scrolls here.
  scroll: css({ width: 0, minWidth: '100%', overflowX: 'auto', marginTop: theme.spacing(1) }),
  table: css({
    fontSize: theme.typography.bodySmall.fontSize,
    'th, td': { padding: theme.spacing(0.5, 0.75), textAlign: 'left', whiteSpace: 'nowrap' },
    // Headers wrap (figures do not): the table narrows to the page before it needs to scroll.
    th: { whiteSpace: 'normal', verticalAlign: 'bottom' },
    'tbody tr:nth-child(odd)': { background: theme.colors.background.secondary },
  }),
  chartCell: css({ minWidth: 96 }),
  barCPU: css({ height: 6, background: theme.colors.primary.main, marginBottom: 2 }),
  barBytes: css({ height: 6, background: theme.colors.warning.main }),
});
