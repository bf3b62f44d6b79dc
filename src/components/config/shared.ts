import { ChangeEvent } from 'react';

import { Errors } from '../../settings';
import { QuiverOptions, QuiverSecureJsonData } from '../../types';

export type SecretKey = keyof QuiverSecureJsonData;

/** What every section of the settings page reads and changes. */
export interface SectionProps {
  jsonData: QuiverOptions;
  secureJsonData: QuiverSecureJsonData;
  secureJsonFields: Record<string, boolean>;
  errors: Errors;
  setJson: (patch: Partial<QuiverOptions>) => void;
  setSecret: (key: SecretKey, value: string) => void;
  resetSecret: (key: SecretKey) => void;
  /** Replaces all three at once (a header removed clears its name and its stored value). */
  onOptionsChange: (
    jsonData: QuiverOptions,
    secureJsonData: QuiverSecureJsonData,
    secureJsonFields: Record<string, boolean>
  ) => void;
}

type TextKey =
  | 'address'
  | 'allowedLocationHosts'
  | 'tlsServerName'
  | 'username'
  | 'catalog'
  | 'schema'
  | 'redisAddress'
  | 'redisUsername'
  | 'redisKeyPrefix';

/** Value and change handler of a plain text setting. */
export function textProps({ jsonData, setJson }: SectionProps, key: TextKey) {
  return {
    value: jsonData[key] ?? '',
    onChange: (e: ChangeEvent<HTMLInputElement>) => setJson({ [key]: e.currentTarget.value }),
  };
}

/** Props of a SecretInput / SecretTextArea: configured state, typed value, reset. */
export function secretProps({ secureJsonData, secureJsonFields, resetSecret }: SectionProps, key: SecretKey) {
  return {
    isConfigured: Boolean(secureJsonFields[key]),
    value: secureJsonData[key] ?? '',
    onReset: () => resetSecret(key),
  };
}

/** Field props for a setting with a validation message. */
export function fieldError(errors: Errors, key: string) {
  return { invalid: Boolean(errors[key]), error: errors[key] };
}
