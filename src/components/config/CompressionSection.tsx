import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Field, RadioButtonGroup, Slider, useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import {
  choice,
  defaultLevel,
  defaults,
  effectiveLevel,
  hasLevel,
  levelOrDefault,
  levelRange,
  ranges,
} from '../../settings';
import { Codec, CodecPreference, LevelCodec, QuiverOptions, ReplyFormat, Upstream } from '../../types';
import { CodecAdvisor } from '../CodecAdvisor';
import { NumberInput } from '../NumberInput';
import { Wrap } from '../Wrap';
import { ConfigSection } from './Section';
import { fieldError, SectionProps } from './shared';

const codecOptions: Array<{ label: string; value: Codec }> = [
  { label: 'auto', value: 'auto' },
  { label: 'zstd', value: 'zstd' },
  { label: 'lz4', value: 'lz4' },
  { label: 'none', value: 'none' },
];

const preferenceOptions: Array<{ label: string; value: CodecPreference }> = [
  { label: labels.compression.preference.options.cpu, value: 'cpu' },
  { label: labels.compression.preference.options.bytes, value: 'bytes' },
];

const replyFormatOptions: Array<{ label: string; value: ReplyFormat }> = [
  { label: labels.compression.replyFormat.options.arrow, value: 'arrow' },
  { label: labels.compression.replyFormat.options.json, value: 'json' },
  { label: labels.compression.replyFormat.options.requested, value: 'requested' },
];

interface CompressionProps extends SectionProps {
  /** The data source's uid, for the codec advisor's resource call. */
  uid: string;
  upstream: Upstream;
}

/**
 * Compression: the codec of the frame bodies, its level (or auto's preference), the minimum savings, the reply
 * format, the advisor.
 */
export function CompressionSection({ jsonData, errors, setJson, uid, upstream }: CompressionProps) {
  const styles = useStyles2(getStyles);
  const codec = choice(jsonData, 'codec');
  // A level means something different for each codec: start the new codec at its own default.
  const onCodecChange = (next: Codec) =>
    setJson({ codec: next, level: hasLevel(next) ? defaultLevel[next] : undefined });
  return (
    <ConfigSection title={labels.compression.section} description={labels.compression.description}>
      <Field label={labels.compression.codec} {...fieldError(errors, 'codec')}>
        <Wrap testId={selectors.config.codec}>
          <RadioButtonGroup<Codec>
            aria-label={labels.compression.codec}
            options={codecOptions}
            value={codec}
            onChange={onCodecChange}
          />
        </Wrap>
      </Field>
      <ul className={styles.codecHelp} data-testid={selectors.config.codecHelp}>
        {codecOptions.map(({ value }) => (
          <li key={value} className={value === codec ? styles.selectedHelp : undefined}>
            {labels.compression.codecHelp[value]}
          </li>
        ))}
      </ul>
      {hasLevel(codec) && <LevelField codec={codec} level={jsonData.level} error={errors.level} setJson={setJson} />}
      {(codec === 'auto' || Boolean(errors.codecPreference)) && (
        <Field
          label={labels.compression.preference.label}
          description={labels.compression.preference.tooltip}
          {...fieldError(errors, 'codecPreference')}
        >
          <Wrap testId={selectors.config.codecPreference}>
            <RadioButtonGroup<CodecPreference>
              aria-label={labels.compression.preference.label}
              options={preferenceOptions}
              value={choice(jsonData, 'codecPreference')}
              onChange={(v) => setJson({ codecPreference: v })}
            />
          </Wrap>
        </Field>
      )}
      <Field
        label={labels.compression.minSavings.label}
        description={labels.compression.minSavings.tooltip}
        {...fieldError(errors, 'minSavings')}
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
          invalid={Boolean(errors.minSavings)}
        />
      </Field>
      <Field
        label={labels.compression.replyFormat.label}
        description={labels.compression.replyFormat.tooltip}
        {...fieldError(errors, 'replyFormat')}
      >
        <Wrap testId={selectors.config.replyFormat}>
          <RadioButtonGroup<ReplyFormat>
            aria-label={labels.compression.replyFormat.label}
            options={replyFormatOptions}
            value={choice(jsonData, 'replyFormat')}
            onChange={(v) => setJson({ replyFormat: v })}
          />
        </Wrap>
      </Field>
      <CodecAdvisor uid={uid} upstream={upstream} onUse={setJson} />
    </ConfigSection>
  );
}

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
    <Field
      label={labels.compression.level.label(codec)}
      description={labels.compression.level.tooltip}
      invalid={Boolean(error)}
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
    </Field>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  codecHelp: css({
    listStyle: 'none',
    margin: theme.spacing(0, 0, 2, 0),
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  selectedHelp: css({ color: theme.colors.text.primary, fontWeight: theme.typography.fontWeightMedium }),
  level: css({ display: 'flex', alignItems: 'center', gap: theme.spacing(2) }),
  slider: css({ width: theme.spacing(40) }),
  effective: css({ color: theme.colors.text.secondary, whiteSpace: 'nowrap' }),
});
