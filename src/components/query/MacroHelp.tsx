import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';

/** The macros SQL may use, folded away under a summary. */
export function MacroHelp() {
  const styles = useStyles2(getStyles);
  return (
    <details className={styles.macros} data-testid={selectors.query.macros}>
      <summary>{labels.query.macros}</summary>
      <table>
        <tbody>
          {labels.query.macroHelp.map(([macro, text]) => (
            <tr key={macro}>
              <td>
                <code>{macro}</code>
              </td>
              <td>{text}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  macros: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    td: { paddingRight: theme.spacing(2) },
  }),
});
