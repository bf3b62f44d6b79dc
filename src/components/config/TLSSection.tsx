import React from 'react';
import { Alert, Field, Input, SecretTextArea, Switch } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { QuiverOptions } from '../../types';
import { ConfigSection, ConfigSubSection } from './Section';
import { fieldError, SecretKey, secretProps, SectionProps, textProps } from './shared';

type Flag = 'tlsEnabled' | 'tlsSkipVerify' | 'tlsAuthWithCACert' | 'tlsAuth';

/** TLS: on or off, server verification (CA certificate, skip, server name) and the client certificate. */
export function TLSSection(props: SectionProps) {
  const { jsonData, errors, setJson, setSecret } = props;
  const t = labels.flightsql.tls;
  const toggle = (key: Flag, label: string, testId: string, description?: string) => (
    <Field label={label} description={description} {...fieldError(errors, key)}>
      <Switch
        data-testid={testId}
        value={Boolean(jsonData[key])}
        onChange={(e) => {
          const patch: Partial<QuiverOptions> = {};
          patch[key] = e.currentTarget.checked;
          setJson(patch);
        }}
      />
    </Field>
  );
  const pem = (key: SecretKey, label: string, placeholder: string, testId: string) => (
    <Field label={label} required {...fieldError(errors, key)}>
      <SecretTextArea
        data-testid={testId}
        placeholder={placeholder}
        cols={60}
        rows={4}
        onChange={(e) => setSecret(key, e.currentTarget.value)}
        {...secretProps(props, key)}
      />
    </Field>
  );
  return (
    <ConfigSection title={labels.sections.tls} description={labels.sections.tlsDescription}>
      {toggle('tlsEnabled', t.enabled, selectors.config.tlsEnabled, t.enabledTooltip)}
      {jsonData.tlsEnabled && (
        <>
          <ConfigSubSection title={t.serverSection}>
            {toggle('tlsSkipVerify', t.skipVerify, selectors.config.tlsSkipVerify)}
            {jsonData.tlsSkipVerify && (
              <Alert severity="warning" title={t.skipVerify}>
                {t.skipVerifyWarning}
              </Alert>
            )}
            {toggle('tlsAuthWithCACert', t.withCACert, selectors.config.tlsAuthWithCACert, t.withCACertTooltip)}
            {jsonData.tlsAuthWithCACert && pem('tlsCACert', t.caCert, t.caCertPlaceholder, selectors.config.tlsCACert)}
            <Field label={t.serverName} description={t.serverNameTooltip}>
              <Input data-testid={selectors.config.tlsServerName} {...textProps(props, 'tlsServerName')} />
            </Field>
          </ConfigSubSection>
          <ConfigSubSection title={t.clientSection}>
            {toggle('tlsAuth', t.clientAuth, selectors.config.tlsAuth, t.clientAuthTooltip)}
            {jsonData.tlsAuth && (
              <>
                {pem('tlsClientCert', t.clientCert, t.clientCertPlaceholder, selectors.config.tlsClientCert)}
                {pem('tlsClientKey', t.clientKey, t.clientKeyPlaceholder, selectors.config.tlsClientKey)}
              </>
            )}
          </ConfigSubSection>
        </>
      )}
    </ConfigSection>
  );
}
