import React from 'react';
import { Field, Input, RadioButtonGroup, SecretInput, Switch } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { choice } from '../../settings';
import { AuthType, NoForwardedIdentity } from '../../types';
import { Wrap } from '../Wrap';
import { ConfigSection } from './Section';
import { fieldError, secretProps, SectionProps, textProps } from './shared';

const authOptions: Array<{ label: string; value: AuthType }> = [
  { label: labels.flightsql.auth.none, value: 'none' },
  { label: labels.flightsql.auth.token, value: 'token' },
  { label: labels.flightsql.auth.password, value: 'password' },
];

const noIdentityOptions: Array<{ label: string; value: NoForwardedIdentity }> = [
  { label: labels.flightsql.auth.refuse, value: 'refuse' },
  { label: labels.flightsql.auth.configured, value: 'configured' },
];

/** Authentication: none, token or user and password, and forwarding the user's OAuth identity. */
export function AuthSection(props: SectionProps) {
  const { jsonData, errors, setJson, setSecret } = props;
  const authType = choice(jsonData, 'authType');
  return (
    <ConfigSection title={labels.sections.authentication} description={labels.sections.authenticationDescription}>
      <Field label={labels.flightsql.auth.label} {...fieldError(errors, 'authType')}>
        <Wrap testId={selectors.config.authType}>
          <RadioButtonGroup<AuthType>
            aria-label={labels.flightsql.auth.label}
            options={authOptions}
            value={authType}
            onChange={(v) => setJson({ authType: v })}
          />
        </Wrap>
      </Field>
      {authType === 'token' && (
        <Field label={labels.flightsql.auth.tokenLabel} required {...fieldError(errors, 'token')}>
          <SecretInput
            data-testid={selectors.config.token}
            placeholder={labels.flightsql.auth.tokenPlaceholder}
            onChange={(e) => setSecret('token', e.currentTarget.value)}
            {...secretProps(props, 'token')}
          />
        </Field>
      )}
      {authType === 'password' && (
        <>
          <Field label={labels.flightsql.auth.username} required {...fieldError(errors, 'username')}>
            <Input data-testid={selectors.config.username} {...textProps(props, 'username')} />
          </Field>
          <Field label={labels.flightsql.auth.password_} required {...fieldError(errors, 'password')}>
            <SecretInput
              data-testid={selectors.config.password}
              onChange={(e) => setSecret('password', e.currentTarget.value)}
              {...secretProps(props, 'password')}
            />
          </Field>
        </>
      )}
      <Field
        label={labels.flightsql.auth.oauthPassThru}
        description={labels.flightsql.auth.oauthPassThruTooltip}
        {...fieldError(errors, 'oauthPassThru')}
      >
        <Switch
          data-testid={selectors.config.oauthPassThru}
          value={Boolean(jsonData.oauthPassThru)}
          onChange={(e) => setJson({ oauthPassThru: e.currentTarget.checked })}
        />
      </Field>
      {(Boolean(jsonData.oauthPassThru) || Boolean(errors.noForwardedIdentity)) && (
        <Field
          label={labels.flightsql.auth.noForwardedIdentity}
          description={labels.flightsql.auth.noForwardedIdentityTooltip}
          {...fieldError(errors, 'noForwardedIdentity')}
        >
          <Wrap testId={selectors.config.noForwardedIdentity}>
            <RadioButtonGroup<NoForwardedIdentity>
              aria-label={labels.flightsql.auth.noForwardedIdentity}
              options={noIdentityOptions}
              value={choice(jsonData, 'noForwardedIdentity')}
              onChange={(v) => setJson({ noForwardedIdentity: v })}
            />
          </Wrap>
        </Field>
      )}
    </ConfigSection>
  );
}
