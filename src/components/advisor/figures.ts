import { Codec, CodecPreference, QuiverOptions } from '../../types';

/** One codec setting's figures, as the backend resource `POST advise` answers (pkg/plugin/advisor.go). */
export interface AdviseFigures {
  codec: Codec;
  level: number;
  codecPreference?: CodecPreference;
  wireBytes: number;
  ratio: number;
  encodeMicrosPerFrame: number;
  decodeMicrosPerFrame: number;
  totalMicrosPerFrame: number;
  buffersCompressed: number;
  buffersRaw: number;
  buffersSkipped: number;
  framesAs: Record<string, number>;
}

export interface AdviseResult {
  frames: number;
  rows: number;
  settings: AdviseFigures[];
}

/** The name of a setting, as the table and the selectors show it: "auto cpu", "zstd 3", "none". */
export function settingName(f: Pick<AdviseFigures, 'codec' | 'level' | 'codecPreference'>): string {
  switch (f.codec) {
    case 'auto':
      return `auto ${f.codecPreference ?? 'cpu'}`;
    case 'none':
      return 'none';
    default:
      return `${f.codec} ${f.level}`;
  }
}

/** The jsonData patch that selects a setting. */
export function settingPatch(f: AdviseFigures): Partial<QuiverOptions> {
  if (f.codec === 'auto') {
    return { codec: 'auto', level: undefined, codecPreference: f.codecPreference ?? 'cpu' };
  }
  if (f.codec === 'none') {
    return { codec: 'none', level: undefined };
  }
  return { codec: f.codec, level: f.level };
}

/** Bytes in B, KiB (one decimal) or MiB (two decimals). */
export function formatBytes(n: number): string {
  if (n >= 1 << 20) {
    return `${(n / (1 << 20)).toFixed(2)} MiB`;
  }
  if (n >= 1 << 10) {
    return `${(n / (1 << 10)).toFixed(1)} KiB`;
  }
  return `${n} B`;
}

/** Microseconds: one decimal below 100, whole from 100. */
export const formatMicros = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

/** The codecs frames went out as, with their counts: "none 2, zstd 18" (codecs never used left out). */
export function formatFramesAs(framesAs: Record<string, number>): string {
  return Object.entries(framesAs)
    .filter(([, n]) => n > 0)
    .map(([c, n]) => `${c} ${n}`)
    .join(', ');
}

/**
 * The message of a failed resource call: the backend's {"error": …}, the error's own text, Grafana's
 * {"message": …} (what Grafana answers itself: plugin unavailable, failed to call resource, permission denied),
 * or the status text (a cancelled request).
 */
export function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const { data, message, statusText } = e as { data?: unknown; message?: unknown; statusText?: unknown };
    const body = typeof data === 'object' && data !== null ? (data as { error?: unknown; message?: unknown }) : {};
    if (typeof body.error === 'string') {
      return body.error;
    }
    if (typeof message === 'string') {
      return message;
    }
    if (typeof body.message === 'string' && body.message !== '') {
      return body.message;
    }
    if (typeof statusText === 'string' && statusText !== '') {
      return statusText;
    }
  }
  return String(e);
}
