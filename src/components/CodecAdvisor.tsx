import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, useStyles2 } from '@grafana/ui';

import { labels } from '../labels';
import { selectors } from '../selectors';
import { QuiverOptions, Upstream } from '../types';
import { AdvisorForm } from './advisor/AdvisorForm';
import { AdvisorTable } from './advisor/AdvisorTable';
import { useAdvisor } from './advisor/useAdvisor';

export type { AdviseFigures, AdviseResult } from './advisor/figures';
export { settingName, settingPatch } from './advisor/figures';

export interface Props {
  /** The data source's uid: the advisor runs with its saved settings. */
  uid: string;
  upstream: Upstream;
  /** Called with the jsonData patch of the setting the administrator picks. */
  onUse: (patch: Partial<QuiverOptions>) => void;
}

/**
 * The codec advisor of the Compression section: measures a query the administrator gives under every codec
 * setting (backend resource `POST advise`) and shows wire bytes, plugin encode and Grafana decode time per
 * frame as a table and a small bar chart, with "Use this setting" filling codec and level. Its parts live in
 * advisor/: the state (useAdvisor), the inputs (AdvisorForm), the figures (AdvisorTable, figures.ts).
 */
export function CodecAdvisor({ uid, upstream, onUse }: Props) {
  const styles = useStyles2(getStyles);
  const { state, set, measure, ready } = useAdvisor(uid, upstream);
  return (
    <div className={styles.root} data-testid={selectors.config.advisor}>
      <h6>{labels.compression.advisor.title}</h6>
      <p className={styles.description}>{labels.compression.advisor.description}</p>
      <AdvisorForm upstream={upstream} inputs={state} set={set} busy={state.busy} ready={ready} onMeasure={measure} />
      {state.error && (
        <Alert severity="error" title={labels.compression.advisor.failed} data-testid={selectors.config.advisorError}>
          {state.error}
        </Alert>
      )}
      {state.result && <AdvisorTable result={state.result} onUse={onUse} />}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ marginTop: theme.spacing(2) }),
  description: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(1) }),
});
