import React, { ReactNode, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { IconButton, useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';

// ConfigSection, ConfigSubSection and DataSourceDescription follow the API of @grafana/plugin-ui's
// components of the same names. plugin-ui itself is not used: its 0.17 releases require
// @grafana/* ^13 (this plugin pins 12.4 and supports Grafana from 10.3).

interface SectionProps {
  title: string;
  description?: ReactNode;
  isCollapsible?: boolean;
  isInitiallyOpen?: boolean;
  testId?: string;
  children: ReactNode;
}

function Section({
  title,
  description,
  isCollapsible,
  isInitiallyOpen = true,
  testId,
  children,
  sub,
}: SectionProps & { sub: boolean }) {
  const styles = useStyles2(getStyles);
  const [open, setOpen] = useState(isInitiallyOpen);
  const Heading = sub ? 'h6' : 'h3';
  return (
    <section className={sub ? styles.sub : styles.section} data-testid={testId}>
      <div className={styles.header}>
        <Heading className={styles.title}>{title}</Heading>
        {isCollapsible && (
          <IconButton
            name={open ? 'angle-up' : 'angle-down'}
            tooltip={open ? labels.sections.collapse : labels.sections.expand}
            onClick={() => setOpen(!open)}
          />
        )}
      </div>
      {description && <p className={styles.description}>{description}</p>}
      {open && <div className={styles.body}>{children}</div>}
    </section>
  );
}

/** A top-level section of the settings page. */
export const ConfigSection = (props: SectionProps) => <Section {...props} sub={false} />;

/** A section inside a ConfigSection. */
export const ConfigSubSection = (props: SectionProps) => <Section {...props} sub />;

interface DescriptionProps {
  dataSourceName: string;
  description: string;
  docsLink: string;
  hasRequiredFields?: boolean;
}

/** The header of the settings page: what the data source is, its documentation, required fields. */
export function DataSourceDescription({ dataSourceName, description, docsLink, hasRequiredFields }: DescriptionProps) {
  const styles = useStyles2(getStyles);
  return (
    <div className={styles.intro}>
      <p>
        {description}{' '}
        <a className={styles.link} href={docsLink} target="_blank" rel="noreferrer">
          {labels.header.docs} ({dataSourceName})
        </a>
      </p>
      {hasRequiredFields && <p className={styles.description}>{labels.header.required}</p>}
    </div>
  );
}

/** A horizontal rule between sections. */
export function Divider() {
  const styles = useStyles2(getStyles);
  return <hr className={styles.divider} />;
}

const getStyles = (theme: GrafanaTheme2) => ({
  section: css({ marginBottom: theme.spacing(2) }),
  sub: css({ marginTop: theme.spacing(2) }),
  header: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(1) }),
  title: css({ margin: 0 }),
  description: css({ color: theme.colors.text.secondary, margin: theme.spacing(0.5, 0, 1, 0) }),
  body: css({ marginTop: theme.spacing(1) }),
  intro: css({ marginBottom: theme.spacing(2) }),
  link: css({ color: theme.colors.text.link, textDecoration: 'underline' }),
  divider: css({ border: 0, borderTop: `1px solid ${theme.colors.border.weak}`, margin: theme.spacing(3, 0) }),
});
