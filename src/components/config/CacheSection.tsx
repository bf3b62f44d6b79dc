import React from 'react';
import { Field, Input, SecretInput, Switch } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { defaults } from '../../settings';
import { QuiverOptions } from '../../types';
import { NumberInput } from '../NumberInput';
import { ConfigSection } from './Section';
import { fieldError, secretProps, SectionProps, textProps } from './shared';

type CacheNumber = 'incrementalOverlap' | 'resultCacheBytes' | 'redisTTL';

/** Result cache: incremental queries, the memory they keep, and Redis to share it between replicas. */
export function CacheSection(props: SectionProps) {
  const { jsonData, errors, setJson, setSecret } = props;
  const number = (key: CacheNumber, testId: string) => (
    <Field
      key={key}
      label={labels.cache[key].label}
      description={labels.cache[key].tooltip}
      {...fieldError(errors, key)}
    >
      <NumberInput
        testId={testId}
        value={jsonData[key]}
        onChange={(v) => {
          const patch: Partial<QuiverOptions> = {};
          patch[key] = v;
          setJson(patch);
        }}
        placeholder={String(defaults[key])}
        width={20}
        invalid={Boolean(errors[key])}
      />
    </Field>
  );
  const on = jsonData.incrementalQueries ?? defaults.incrementalQueries;
  const redis = on && Boolean(jsonData.redisAddress);
  // A field the switches hide is still shown while its value is wrong: the health check reports it.
  const shown = (key: CacheNumber | 'redisAddress', visible: boolean) => visible || Boolean(errors[key]);
  return (
    <ConfigSection title={labels.cache.section} description={labels.cache.description}>
      <Field
        label={labels.cache.incrementalQueries.label}
        description={labels.cache.incrementalQueries.tooltip}
        {...fieldError(errors, 'incrementalQueries')}
      >
        <Switch
          data-testid={selectors.config.incrementalQueries}
          value={on}
          onChange={(e) => setJson({ incrementalQueries: e.currentTarget.checked })}
        />
      </Field>
      {shown('incrementalOverlap', on) && number('incrementalOverlap', selectors.config.incrementalOverlap)}
      {on && (
        <Field
          label={labels.cache.incrementalNotice.label}
          description={labels.cache.incrementalNotice.tooltip}
          {...fieldError(errors, 'incrementalNotice')}
        >
          <Switch
            data-testid={selectors.config.incrementalNotice}
            value={jsonData.incrementalNotice ?? defaults.incrementalNotice}
            onChange={(e) => setJson({ incrementalNotice: e.currentTarget.checked })}
          />
        </Field>
      )}
      {shown('redisAddress', on) && (
        <Field
          label={labels.cache.redisAddress.label}
          description={labels.cache.redisAddress.tooltip}
          {...fieldError(errors, 'redisAddress')}
        >
          <Input
            data-testid={selectors.config.redisAddress}
            placeholder="redis:6379"
            {...textProps(props, 'redisAddress')}
          />
        </Field>
      )}
      {shown('resultCacheBytes', on && !jsonData.redisAddress) &&
        number('resultCacheBytes', selectors.config.resultCacheBytes)}
      {redis && (
        <>
          <Field
            label={labels.cache.redisTLS.label}
            description={labels.cache.redisTLS.tooltip}
            {...fieldError(errors, 'redisTLS')}
          >
            <Switch
              data-testid={selectors.config.redisTLS}
              value={Boolean(jsonData.redisTLS)}
              onChange={(e) => setJson({ redisTLS: e.currentTarget.checked })}
            />
          </Field>
          <Field label={labels.cache.redisUsername.label} description={labels.cache.redisUsername.tooltip}>
            <Input data-testid={selectors.config.redisUsername} {...textProps(props, 'redisUsername')} />
          </Field>
          <Field label={labels.cache.redisPassword.label} description={labels.cache.redisPassword.tooltip}>
            <SecretInput
              data-testid={selectors.config.redisPassword}
              onChange={(e) => setSecret('redisPassword', e.currentTarget.value)}
              {...secretProps(props, 'redisPassword')}
            />
          </Field>
          <Field label={labels.cache.redisKeyPrefix.label} description={labels.cache.redisKeyPrefix.tooltip}>
            <Input
              data-testid={selectors.config.redisKeyPrefix}
              placeholder={defaults.redisKeyPrefix}
              {...textProps(props, 'redisKeyPrefix')}
            />
          </Field>
        </>
      )}
      {shown('redisTTL', redis) && number('redisTTL', selectors.config.redisTTL)}
    </ConfigSection>
  );
}
