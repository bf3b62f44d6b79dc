import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { DataSourcePluginOptionsEditorProps, GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';

import { labels } from '../labels';
import { choice, validate } from '../settings';
import { QuiverOptions, QuiverSecureJsonData } from '../types';
import { AdvancedSection } from './config/AdvancedSection';
import { AuthSection } from './config/AuthSection';
import { CacheSection } from './config/CacheSection';
import { CompressionSection } from './config/CompressionSection';
import { ConnectionSection } from './config/ConnectionSection';
import { LimitsSection } from './config/LimitsSection';
import { DataSourceDescription, Divider } from './config/Section';
import { SecretKey, SectionProps } from './config/shared';
import { TLSSection } from './config/TLSSection';

export type Props = DataSourcePluginOptionsEditorProps<QuiverOptions, QuiverSecureJsonData>;

const docsLink = 'https://github.com/quiverdata/quiver#readme';

/**
 * Settings page of one Quiver data source: Connection, then for Flight SQL Authentication, TLS
 * and Advanced; Compression and Limits for every source. Each section lives in config/.
 */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const styles = useStyles2(getStyles);
  const { jsonData } = options;
  const secureJsonData: QuiverSecureJsonData = useMemo(() => options.secureJsonData ?? {}, [options.secureJsonData]);
  const secureJsonFields = useMemo(() => options.secureJsonFields ?? {}, [options.secureJsonFields]);
  const errors = useMemo(
    () => validate(jsonData, secureJsonData, secureJsonFields),
    [jsonData, secureJsonData, secureJsonFields]
  );

  const section: SectionProps = {
    jsonData,
    secureJsonData,
    secureJsonFields,
    errors,
    setJson: (patch) => onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } }),
    setSecret: (key: SecretKey, value: string) =>
      onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: value } }),
    resetSecret: (key: SecretKey) =>
      onOptionsChange({
        ...options,
        secureJsonFields: { ...secureJsonFields, [key]: false },
        secureJsonData: { ...secureJsonData, [key]: '' },
      }),
    onOptionsChange: (jd, sd, sf) =>
      onOptionsChange({ ...options, jsonData: jd, secureJsonData: sd, secureJsonFields: sf }),
  };
  const flightSQL = choice(jsonData, 'upstream') === 'flightsql';

  return (
    <div className={styles.root}>
      <DataSourceDescription
        dataSourceName={labels.header.title}
        description={labels.header.description}
        docsLink={docsLink}
        hasRequiredFields={flightSQL}
      />
      <Divider />
      <ConnectionSection {...section} />
      {flightSQL && (
        <>
          <Divider />
          <AuthSection {...section} />
          <Divider />
          <TLSSection {...section} />
        </>
      )}
      <Divider />
      <CompressionSection {...section} uid={options.uid} upstream={choice(jsonData, 'upstream')} />
      <Divider />
      <LimitsSection {...section} />
      {flightSQL && (
        <>
          <Divider />
          <CacheSection {...section} />
          <Divider />
          <AdvancedSection {...section} />
        </>
      )}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ maxWidth: theme.spacing(100) }),
});
