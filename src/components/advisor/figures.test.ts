import { errorText, formatBytes, formatFramesAs, formatMicros, settingName, settingPatch } from './figures';

const figures = {
  level: 0,
  wireBytes: 1,
  ratio: 1,
  encodeMicrosPerFrame: 1,
  decodeMicrosPerFrame: 1,
  totalMicrosPerFrame: 2,
  buffersCompressed: 0,
  buffersRaw: 0,
  buffersSkipped: 0,
  framesAs: {},
};

test('settingName names auto by its preference (cpu when unset), none alone, the rest with their level', () => {
  expect(settingName({ codec: 'auto', level: 0 })).toBe('auto cpu');
  expect(settingName({ codec: 'auto', level: 0, codecPreference: 'bytes' })).toBe('auto bytes');
  expect(settingName({ codec: 'none', level: 0 })).toBe('none');
  expect(settingName({ codec: 'zstd', level: 19 })).toBe('zstd 19');
});

test('settingPatch clears the level for auto and none and keeps it for zstd and lz4', () => {
  expect(settingPatch({ ...figures, codec: 'auto' })).toEqual({
    codec: 'auto',
    level: undefined,
    codecPreference: 'cpu',
  });
  expect(settingPatch({ ...figures, codec: 'none', level: 3 })).toEqual({ codec: 'none', level: undefined });
  expect(settingPatch({ ...figures, codec: 'lz4', level: 9 })).toEqual({ codec: 'lz4', level: 9 });
});

test('formatBytes switches unit at 1 KiB and 1 MiB', () => {
  expect(formatBytes(1023)).toBe('1023 B');
  expect(formatBytes(1024)).toBe('1.0 KiB');
  expect(formatBytes(347000)).toBe('338.9 KiB');
  expect(formatBytes(1 << 20)).toBe('1.00 MiB');
});

test('formatMicros keeps one decimal below 100', () => {
  expect(formatMicros(9)).toBe('9.0');
  expect(formatMicros(99.94)).toBe('99.9');
  expect(formatMicros(100)).toBe('100');
  expect(formatMicros(995.4)).toBe('995');
});

test('formatFramesAs lists the codecs used, in order, and leaves out the unused', () => {
  expect(formatFramesAs({ none: 2, lz4: 0, zstd: 18 })).toBe('none 2, zstd 18');
  expect(formatFramesAs({ none: 0 })).toBe('');
});

test("errorText prefers the backend's error, then the error's message", () => {
  expect(errorText({ status: 424, data: { error: 'advise: unreachable' } })).toBe('advise: unreachable');
  expect(errorText({ data: { message: 'not this' }, message: 'timeout' })).toBe('timeout');
  expect(errorText(new Error('boom'))).toBe('boom');
  expect(errorText('plain')).toBe('plain');
  expect(errorText(null)).toBe('null');
});
