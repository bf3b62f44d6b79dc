import React, { ChangeEvent, useMemo } from 'react';
import { css } from '@emotion/css';
import { DataSourcePluginOptionsEditorProps, GrafanaTheme2, SelectableValue } from '@grafana/data';
import {
  Alert,
  Button,
  FieldSet,
  IconButton,
  InlineField,
  InlineFieldRow,
  InlineSwitch,
  Input,
  RadioButtonGroup,
  SecretInput,
  SecretTextArea,
  Select,
  Slider,
  useStyles2,
} from '@grafana/ui';

import { labels } from '../labels';
import { selectors } from '../selectors';
import {
  defaultLevel,
  defaults,
  dialects,
  effectiveLevel,
  Errors,
  headerIndexes,
  headerNameKey,
  headerValueKey,
  hasLevel,
  levelOrDefault,
  levelRange,
  ranges,
  validate,
} from '../settings';
import {
  AuthType,
  Codec,
  CodecPreference,
  Dialect,
  LevelCodec,
  QuiverOptions,
  QuiverSecureJsonData,
  Upstream,
} from '../types';
import { CodecAdvisor } from './CodecAdvisor';
import { NumberInput } from './NumberInput';
import { Wrap } from './Wrap';

export type Props = DataSourcePluginOptionsEditorProps<QuiverOptions, QuiverSecureJsonData>;

type SecretKey = keyof QuiverSecureJsonData;

const LABEL_WIDTH = 24;
const INPUT_WIDTH = 40;

const upstreamOptions: Array<{ label: string; value: Upstream }> = [
  { label: labels.upstream.demo, value: 'demo' },
  { label: labels.upstream.flightsql, value: 'flightsql' },
];

const codecOptions: Array<{ label: string; value: Codec }> = [
  { label: 'auto', value: 'auto' },
  { label: 'zstd', value: 'zstd' },
  { label: 'lz4', value: 'lz4' },
  { label: 'none', value: 'none' },
];

const authOptions: Array<{ label: string; value: AuthType }> = [
  { label: labels.flightsql.auth.none, value: 'none' },
  { label: labels.flightsql.auth.token, value: 'token' },
  { label: labels.flightsql.auth.password, value: 'password' },
];

/** Editor of one Quiver data source: upstream, compression and limits. */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const styles = useStyles2(getStyles);
  const { jsonData } = options;
  const secureJsonData: QuiverSecureJsonData = useMemo(() => options.secureJsonData ?? {}, [options.secureJsonData]);
  const secureJsonFields = useMemo(() => options.secureJsonFields ?? {}, [options.secureJsonFields]);
  const errors = useMemo(
    () => validate(jsonData, secureJsonData, secureJsonFields),
    [jsonData, secureJsonData, secureJsonFields]
  );

  const setJson = (patch: Partial<QuiverOptions>) => {
    onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } });
  };
  const setSecret = (key: SecretKey, value: string) => {
    onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: value } });
  };
  const resetSecret = (key: SecretKey) => {
    onOptionsChange({
      ...options,
      secureJsonFields: { ...secureJsonFields, [key]: false },
      secureJsonData: { ...secureJsonData, [key]: '' },
    });
  };

  const upstream = jsonData.upstream ?? defaults.upstream;
  const codec = jsonData.codec ?? defaults.codec;

  const onCodecChange = (next: Codec) => {
    // A level means something different for each codec: start the new codec at its own default.
    setJson({ codec: next, level: hasLevel(next) ? defaultLevel[next] : undefined });
  };

  return (
    <div className={styles.root}>
      <FieldSet label={labels.upstream.section}>
        <p className={styles.description}>{labels.upstream.description}</p>
        <InlineField
          label={labels.upstream.label}
          labelWidth={LABEL_WIDTH}
          invalid={!!errors.upstream}
          error={errors.upstream}
        >
          <Wrap testId={selectors.config.upstream}>
            <RadioButtonGroup<Upstream>
              options={upstreamOptions}
              value={upstream}
              onChange={(v) => setJson({ upstream: v })}
            />
          </Wrap>
        </InlineField>
        {upstream === 'demo' ? (
          <p className={styles.description}>{labels.upstream.demoHelp}</p>
        ) : (
          <FlightSQLSettings
            jsonData={jsonData}
            secureJsonData={secureJsonData}
            secureJsonFields={secureJsonFields}
            errors={errors}
            setJson={setJson}
            setSecret={setSecret}
            resetSecret={resetSecret}
            onOptionsChange={(jd, sd, sf) =>
              onOptionsChange({ ...options, jsonData: jd, secureJsonData: sd, secureJsonFields: sf })
            }
          />
        )}
      </FieldSet>

      <FieldSet label={labels.compression.section}>
        <p className={styles.description}>{labels.compression.description}</p>
        <InlineField
          label={labels.compression.codec}
          labelWidth={LABEL_WIDTH}
          invalid={!!errors.codec}
          error={errors.codec}
        >
          <Wrap testId={selectors.config.codec}>
            <RadioButtonGroup<Codec> options={codecOptions} value={codec} onChange={onCodecChange} />
          </Wrap>
        </InlineField>
        <ul className={styles.codecHelp} data-testid={selectors.config.codecHelp}>
          {codecOptions.map(({ value }) => (
            <li key={value} className={value === codec ? styles.selectedHelp : undefined}>
              {labels.compression.codecHelp[value]}
            </li>
          ))}
        </ul>
        {hasLevel(codec) && <LevelField codec={codec} level={jsonData.level} error={errors.level} setJson={setJson} />}
        {codec === 'auto' && (
          <InlineField
            label={labels.compression.preference.label}
            labelWidth={LABEL_WIDTH}
            tooltip={labels.compression.preference.tooltip}
            invalid={!!errors.codecPreference}
            error={errors.codecPreference}
          >
            <Wrap testId={selectors.config.codecPreference}>
              <RadioButtonGroup<CodecPreference>
                options={preferenceOptions}
                value={jsonData.codecPreference ?? defaults.codecPreference}
                onChange={(v) => setJson({ codecPreference: v })}
              />
            </Wrap>
          </InlineField>
        )}
        <InlineField
          label={labels.compression.minSavings.label}
          labelWidth={LABEL_WIDTH}
          tooltip={labels.compression.minSavings.tooltip}
          invalid={!!errors.minSavings}
          error={errors.minSavings}
        >
          <NumberInput
            testId={selectors.config.minSavings}
            value={jsonData.minSavings}
            onChange={(v) => setJson({ minSavings: v })}
            placeholder={String(defaults.minSavings)}
            min={ranges.minSavings.min}
            max={ranges.minSavings.max}
            step={0.05}
            width={12}
            invalid={!!errors.minSavings}
          />
        </InlineField>
        <Alert severity="info" title="" data-testid={selectors.config.compatibility} className={styles.alert}>
          {labels.compression.compatibility}
        </Alert>
        <CodecAdvisor uid={options.uid} upstream={upstream} onUse={setJson} />
      </FieldSet>

      <FieldSet label={labels.limits.section}>
        <p className={styles.description}>{labels.limits.description}</p>
        <InlineField
          label={labels.limits.maxSeries.label}
          labelWidth={LABEL_WIDTH}
          tooltip={labels.limits.maxSeries.tooltip}
          invalid={!!errors.maxSeries}
          error={errors.maxSeries}
        >
          <NumberInput
            testId={selectors.config.maxSeries}
            value={jsonData.maxSeries}
            onChange={(v) => setJson({ maxSeries: v })}
            placeholder={String(defaults.maxSeries)}
            width={20}
            invalid={!!errors.maxSeries}
          />
        </InlineField>
        <InlineField
          label={labels.limits.maxPoints.label}
          labelWidth={LABEL_WIDTH}
          tooltip={labels.limits.maxPoints.tooltip}
          invalid={!!errors.maxPoints}
          error={errors.maxPoints}
        >
          <NumberInput
            testId={selectors.config.maxPoints}
            value={jsonData.maxPoints}
            onChange={(v) => setJson({ maxPoints: v })}
            placeholder={String(defaults.maxPoints)}
            width={20}
            invalid={!!errors.maxPoints}
          />
        </InlineField>
      </FieldSet>
    </div>
  );
}

const preferenceOptions: Array<{ label: string; value: CodecPreference }> = [
  { label: labels.compression.preference.options.cpu, value: 'cpu' },
  { label: labels.compression.preference.options.bytes, value: 'bytes' },
];

interface LevelFieldProps {
  codec: LevelCodec;
  level: number | undefined;
  error: string | undefined;
  setJson: (patch: Partial<QuiverOptions>) => void;
}

function LevelField({ codec, level, error, setJson }: LevelFieldProps) {
  const styles = useStyles2(getStyles);
  const range = levelRange[codec];
  const current = levelOrDefault(codec, level) ?? range.min;
  return (
    <InlineField
      label={labels.compression.level.label(codec)}
      labelWidth={LABEL_WIDTH}
      tooltip={labels.compression.level.tooltip}
      invalid={!!error}
      error={error}
    >
      <Wrap className={styles.level}>
        {/* keyed by codec so the slider's own text box restarts with the new range */}
        <div className={styles.slider} data-testid={selectors.config.level} key={codec}>
          <Slider
            min={range.min}
            max={range.max}
            step={1}
            inputId={`quiver-level-${codec}`}
            value={current}
            onChange={(v) => setJson({ level: v })}
            ariaLabelForHandle={labels.compression.level.label(codec)}
          />
        </div>
        <span className={styles.effective} data-testid={selectors.config.levelEffective}>
          {labels.compression.level.effective} {effectiveLevel(codec, current)}
        </span>
      </Wrap>
    </InlineField>
  );
}

const dialectOptions: Array<SelectableValue<Dialect>> = dialects.map((value) => ({
  value,
  label: labels.flightsql.dialect.options[value].label,
  description: labels.flightsql.dialect.options[value].description,
}));

interface FlightSQLProps {
  jsonData: QuiverOptions;
  secureJsonData: QuiverSecureJsonData;
  secureJsonFields: Record<string, boolean>;
  errors: Errors;
  setJson: (patch: Partial<QuiverOptions>) => void;
  setSecret: (key: SecretKey, value: string) => void;
  resetSecret: (key: SecretKey) => void;
  onOptionsChange: (
    jsonData: QuiverOptions,
    secureJsonData: QuiverSecureJsonData,
    secureJsonFields: Record<string, boolean>
  ) => void;
}

function FlightSQLSettings(props: FlightSQLProps) {
  const { jsonData, secureJsonData, secureJsonFields, errors, setJson, setSecret, resetSecret } = props;
  const styles = useStyles2(getStyles);
  const authType = jsonData.authType ?? defaults.authType;
  const text = (key: 'address' | 'tlsServerName' | 'username' | 'catalog' | 'schema') => ({
    value: jsonData[key] ?? '',
    onChange: (e: ChangeEvent<HTMLInputElement>) => setJson({ [key]: e.currentTarget.value }),
  });
  const secret = (key: SecretKey) => ({
    isConfigured: Boolean(secureJsonFields[key]),
    value: secureJsonData[key] ?? '',
    onReset: () => resetSecret(key),
  });

  return (
    <>
      <InlineField
        label={labels.flightsql.address.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.address.description}
        invalid={!!errors.address}
        error={errors.address}
        required
      >
        <Input
          data-testid={selectors.config.address}
          placeholder={labels.flightsql.address.placeholder}
          width={INPUT_WIDTH}
          invalid={!!errors.address}
          {...text('address')}
        />
      </InlineField>

      <h6 className={styles.subheading}>{labels.flightsql.tls.section}</h6>
      <InlineField
        label={labels.flightsql.tls.enabled}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.tls.enabledTooltip}
      >
        <InlineSwitch
          data-testid={selectors.config.tlsEnabled}
          value={Boolean(jsonData.tlsEnabled)}
          onChange={(e) => setJson({ tlsEnabled: e.currentTarget.checked })}
        />
      </InlineField>
      {jsonData.tlsEnabled && (
        <>
          <InlineField label={labels.flightsql.tls.skipVerify} labelWidth={LABEL_WIDTH}>
            <InlineSwitch
              data-testid={selectors.config.tlsSkipVerify}
              value={Boolean(jsonData.tlsSkipVerify)}
              onChange={(e) => setJson({ tlsSkipVerify: e.currentTarget.checked })}
            />
          </InlineField>
          {jsonData.tlsSkipVerify && (
            <Alert severity="warning" title={labels.flightsql.tls.skipVerify} className={styles.alert}>
              {labels.flightsql.tls.skipVerifyWarning}
            </Alert>
          )}
          <InlineField
            label={labels.flightsql.tls.withCACert}
            labelWidth={LABEL_WIDTH}
            tooltip={labels.flightsql.tls.withCACertTooltip}
          >
            <InlineSwitch
              data-testid={selectors.config.tlsAuthWithCACert}
              value={Boolean(jsonData.tlsAuthWithCACert)}
              onChange={(e) => setJson({ tlsAuthWithCACert: e.currentTarget.checked })}
            />
          </InlineField>
          {jsonData.tlsAuthWithCACert && (
            <InlineField
              label={labels.flightsql.tls.caCert}
              labelWidth={LABEL_WIDTH}
              invalid={!!errors.tlsCACert}
              error={errors.tlsCACert}
            >
              <SecretTextArea
                data-testid={selectors.config.tlsCACert}
                placeholder={labels.flightsql.tls.caCertPlaceholder}
                cols={50}
                rows={4}
                onChange={(e) => setSecret('tlsCACert', e.currentTarget.value)}
                {...secret('tlsCACert')}
              />
            </InlineField>
          )}
          <InlineField
            label={labels.flightsql.tls.clientAuth}
            labelWidth={LABEL_WIDTH}
            tooltip={labels.flightsql.tls.clientAuthTooltip}
          >
            <InlineSwitch
              data-testid={selectors.config.tlsAuth}
              value={Boolean(jsonData.tlsAuth)}
              onChange={(e) => setJson({ tlsAuth: e.currentTarget.checked })}
            />
          </InlineField>
          {jsonData.tlsAuth && (
            <>
              <InlineField
                label={labels.flightsql.tls.clientCert}
                labelWidth={LABEL_WIDTH}
                invalid={!!errors.tlsClientCert}
                error={errors.tlsClientCert}
              >
                <SecretTextArea
                  data-testid={selectors.config.tlsClientCert}
                  placeholder={labels.flightsql.tls.clientCertPlaceholder}
                  cols={50}
                  rows={4}
                  onChange={(e) => setSecret('tlsClientCert', e.currentTarget.value)}
                  {...secret('tlsClientCert')}
                />
              </InlineField>
              <InlineField
                label={labels.flightsql.tls.clientKey}
                labelWidth={LABEL_WIDTH}
                invalid={!!errors.tlsClientKey}
                error={errors.tlsClientKey}
              >
                <SecretTextArea
                  data-testid={selectors.config.tlsClientKey}
                  placeholder={labels.flightsql.tls.clientKeyPlaceholder}
                  cols={50}
                  rows={4}
                  onChange={(e) => setSecret('tlsClientKey', e.currentTarget.value)}
                  {...secret('tlsClientKey')}
                />
              </InlineField>
            </>
          )}
          <InlineField
            label={labels.flightsql.tls.serverName}
            labelWidth={LABEL_WIDTH}
            tooltip={labels.flightsql.tls.serverNameTooltip}
          >
            <Input data-testid={selectors.config.tlsServerName} width={INPUT_WIDTH} {...text('tlsServerName')} />
          </InlineField>
        </>
      )}

      <h6 className={styles.subheading}>{labels.flightsql.auth.section}</h6>
      <InlineField
        label={labels.flightsql.auth.label}
        labelWidth={LABEL_WIDTH}
        invalid={!!errors.authType}
        error={errors.authType}
      >
        <Wrap testId={selectors.config.authType}>
          <RadioButtonGroup<AuthType>
            options={authOptions}
            value={authType}
            onChange={(v) => setJson({ authType: v })}
          />
        </Wrap>
      </InlineField>
      <InlineField
        label={labels.flightsql.auth.oauthPassThru}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.auth.oauthPassThruTooltip}
      >
        <InlineSwitch
          data-testid={selectors.config.oauthPassThru}
          value={Boolean(jsonData.oauthPassThru)}
          onChange={(e) => setJson({ oauthPassThru: e.currentTarget.checked })}
        />
      </InlineField>
      {authType === 'token' && (
        <InlineField
          label={labels.flightsql.auth.tokenLabel}
          labelWidth={LABEL_WIDTH}
          invalid={!!errors.token}
          error={errors.token}
          required
        >
          <SecretInput
            data-testid={selectors.config.token}
            placeholder={labels.flightsql.auth.tokenPlaceholder}
            width={INPUT_WIDTH}
            onChange={(e) => setSecret('token', e.currentTarget.value)}
            {...secret('token')}
          />
        </InlineField>
      )}
      {authType === 'password' && (
        <>
          <InlineField
            label={labels.flightsql.auth.username}
            labelWidth={LABEL_WIDTH}
            invalid={!!errors.username}
            error={errors.username}
            required
          >
            <Input data-testid={selectors.config.username} width={INPUT_WIDTH} {...text('username')} />
          </InlineField>
          <InlineField
            label={labels.flightsql.auth.password_}
            labelWidth={LABEL_WIDTH}
            invalid={!!errors.password}
            error={errors.password}
            required
          >
            <SecretInput
              data-testid={selectors.config.password}
              width={INPUT_WIDTH}
              onChange={(e) => setSecret('password', e.currentTarget.value)}
              {...secret('password')}
            />
          </InlineField>
        </>
      )}

      <Headers {...props} />

      <h6 className={styles.subheading}>{labels.flightsql.querySection}</h6>
      <InlineField
        label={labels.flightsql.catalog.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.catalog.tooltip}
      >
        <Input data-testid={selectors.config.catalog} width={INPUT_WIDTH} {...text('catalog')} />
      </InlineField>
      <InlineField
        label={labels.flightsql.schema.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.schema.tooltip}
      >
        <Input data-testid={selectors.config.schema} width={INPUT_WIDTH} {...text('schema')} />
      </InlineField>
      <InlineField
        label={labels.flightsql.dialect.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.dialect.tooltip}
        invalid={!!errors.dialect}
        error={errors.dialect}
      >
        <Wrap testId={selectors.config.dialect}>
          {/* Combobox, which replaces Select, is not in Grafana 10.3 (this plugin's floor). */}
          {/* eslint-disable-next-line @typescript-eslint/no-deprecated */}
          <Select<Dialect>
            width={INPUT_WIDTH}
            options={dialectOptions}
            value={jsonData.dialect ?? defaults.dialect}
            onChange={(v) => setJson({ dialect: v.value })}
          />
        </Wrap>
      </InlineField>
      <InlineField
        label={labels.flightsql.timeout.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.timeout.tooltip}
        invalid={!!errors.timeout}
        error={errors.timeout}
      >
        <NumberInput
          testId={selectors.config.timeout}
          value={jsonData.timeout}
          onChange={(v) => setJson({ timeout: v })}
          placeholder={String(defaults.timeout)}
          width={20}
          invalid={!!errors.timeout}
        />
      </InlineField>
      <InlineField
        label={labels.flightsql.rowLimit.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.rowLimit.tooltip}
        invalid={!!errors.rowLimit}
        error={errors.rowLimit}
      >
        <NumberInput
          testId={selectors.config.rowLimit}
          value={jsonData.rowLimit}
          onChange={(v) => setJson({ rowLimit: v })}
          placeholder={String(defaults.rowLimit)}
          width={20}
          invalid={!!errors.rowLimit}
        />
      </InlineField>
      <InlineField
        label={labels.flightsql.byteLimit.label}
        labelWidth={LABEL_WIDTH}
        tooltip={labels.flightsql.byteLimit.tooltip}
        invalid={!!errors.byteLimit}
        error={errors.byteLimit}
      >
        <NumberInput
          testId={selectors.config.byteLimit}
          value={jsonData.byteLimit}
          onChange={(v) => setJson({ byteLimit: v })}
          placeholder={String(defaults.byteLimit)}
          width={20}
          invalid={!!errors.byteLimit}
        />
      </InlineField>
    </>
  );
}

function Headers({
  jsonData,
  secureJsonData,
  secureJsonFields,
  errors,
  setJson,
  setSecret,
  resetSecret,
  onOptionsChange,
}: FlightSQLProps) {
  const styles = useStyles2(getStyles);
  const indexes = headerIndexes(jsonData, secureJsonFields);

  const add = () => {
    const next = indexes.length === 0 ? 1 : indexes[indexes.length - 1] + 1;
    setJson({ [headerNameKey(next)]: '' });
  };
  // Indexes stay stable: a stored secret value belongs to its index, so rows are never renumbered.
  const remove = (n: number) => {
    const nextJson: QuiverOptions = { ...jsonData };
    delete nextJson[headerNameKey(n)];
    onOptionsChange(
      nextJson,
      { ...secureJsonData, [headerValueKey(n)]: '' },
      { ...secureJsonFields, [headerValueKey(n)]: false }
    );
  };

  return (
    <>
      <h6 className={styles.subheading}>{labels.flightsql.headers.section}</h6>
      <p className={styles.description}>{labels.flightsql.headers.description}</p>
      {indexes.map((n) => {
        const nameKey = headerNameKey(n);
        const valueKey = headerValueKey(n);
        return (
          <InlineFieldRow key={n}>
            <InlineField
              label={labels.flightsql.headers.name}
              labelWidth={10}
              invalid={!!errors[nameKey]}
              error={errors[nameKey]}
            >
              <Input
                data-testid={selectors.config.headerName(n)}
                placeholder={labels.flightsql.headers.namePlaceholder}
                width={24}
                value={jsonData[nameKey] ?? ''}
                onChange={(e) => setJson({ [nameKey]: e.currentTarget.value })}
              />
            </InlineField>
            <InlineField
              label={labels.flightsql.headers.value}
              labelWidth={10}
              invalid={!!errors[valueKey]}
              error={errors[valueKey]}
            >
              <SecretInput
                data-testid={selectors.config.headerValue(n)}
                placeholder={labels.flightsql.headers.valuePlaceholder}
                width={30}
                isConfigured={Boolean(secureJsonFields[valueKey])}
                value={secureJsonData[valueKey] ?? ''}
                onChange={(e) => setSecret(valueKey, e.currentTarget.value)}
                onReset={() => resetSecret(valueKey)}
              />
            </InlineField>
            <IconButton
              name="trash-alt"
              tooltip={labels.flightsql.headers.remove}
              data-testid={selectors.config.headerRemove(n)}
              onClick={() => remove(n)}
            />
          </InlineFieldRow>
        );
      })}
      <Button variant="secondary" icon="plus" size="sm" data-testid={selectors.config.addHeader} onClick={add}>
        {labels.flightsql.headers.add}
      </Button>
    </>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ maxWidth: theme.spacing(120) }),
  description: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(1) }),
  subheading: css({ marginTop: theme.spacing(2) }),
  codecHelp: css({
    listStyle: 'none',
    margin: theme.spacing(0, 0, 1, 0),
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  selectedHelp: css({ color: theme.colors.text.primary, fontWeight: theme.typography.fontWeightMedium }),
  level: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(2) }),
  slider: css({ width: theme.spacing(40) }),
  effective: css({ color: theme.colors.text.secondary, whiteSpace: 'nowrap' }),
  alert: css({ marginTop: theme.spacing(1) }),
});
