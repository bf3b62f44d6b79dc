import { lastValueFrom } from 'rxjs';
import { AnnotationQuery, createDataFrame, FieldType } from '@grafana/data';

import { annotationEvents, annotationSupport, tagList } from './annotations';
import { DataSource } from './datasource';
import { instanceSettings } from './testutil';
import { QuiverQuery } from './types';

describe('annotationEvents', () => {
  it('maps time, timeEnd, text, title, tags and id; a later end makes a region', () => {
    const frame = createDataFrame({
      fields: [
        { name: 'time', type: FieldType.time, values: [1000, 2000, null] },
        { name: 'timeEnd', type: FieldType.time, values: [1000, 5000, 9000] },
        { name: 'text', type: FieldType.string, values: ['deploy', 'outage', 'lost'] },
        { name: 'title', type: FieldType.string, values: ['D', null, 'L'] },
        { name: 'tags', type: FieldType.other, values: [['a', 'b'], 'x, y,', '["z"]'] },
        { name: 'id', type: FieldType.number, values: [1, 2, 3] },
      ],
    });
    expect(annotationEvents([frame])).toEqual([
      { time: 1000, timeEnd: 1000, isRegion: false, text: 'deploy', title: 'D', tags: ['a', 'b'], id: '1' },
      { time: 2000, timeEnd: 5000, isRegion: true, text: 'outage', tags: ['x', 'y'], id: '2' },
    ]);
  });

  it('falls back to the first time and text columns; without a time column there are no events', () => {
    const frame = createDataFrame({
      fields: [
        { name: 'n', type: FieldType.number, values: [1] },
        { name: 'at', type: FieldType.time, values: [1700000000000] },
        { name: 'message', type: FieldType.string, values: ['hello'] },
      ],
    });
    expect(annotationEvents([frame])).toEqual([
      { time: 1700000000000, timeEnd: 1700000000000, isRegion: false, text: 'hello', tags: [] },
    ]);
    const noTime = createDataFrame({ fields: [{ name: 'text', type: FieldType.string, values: ['x'] }] });
    expect(annotationEvents([noTime])).toEqual([]);
    const isoTime = createDataFrame({
      fields: [{ name: 'time', type: FieldType.string, values: ['1970-01-01T00:00:01Z'] }],
    });
    expect(annotationEvents([isoTime])[0].time).toBe(1000);
  });

  it('reads a time in epoch seconds or nanoseconds as Grafana SQL data sources do', () => {
    const frame = createDataFrame({
      fields: [
        { name: 'time', type: FieldType.number, values: [1700000000, 1700000000000, 1700000000000000000] },
        { name: 'timeEnd', type: FieldType.number, values: [1700000060, 1700000060000, 1700000060000000000] },
      ],
    });
    expect(annotationEvents([frame])).toEqual(
      Array(3).fill({ time: 1700000000000, timeEnd: 1700000060000, isRegion: true, tags: [] })
    );
  });

  it('reads tags as lists, JSON lists and comma-separated text', () => {
    expect(tagList(['a', null, ' b '])).toEqual(['a', 'b']);
    expect(tagList('["deploy","host-1"]')).toEqual(['deploy', 'host-1']);
    expect(tagList('a,b , ,c')).toEqual(['a', 'b', 'c']);
    expect(tagList('[not json')).toEqual(['[not json']);
    expect(tagList(null)).toEqual([]);
    expect(tagList(7)).toEqual([]);
  });
});

describe('annotationSupport', () => {
  const anno = (target?: QuiverQuery) =>
    ({ enable: true, name: 'A', iconColor: 'red', target }) as AnnotationQuery<QuiverQuery>;

  it('runs Flight SQL annotations as tables', () => {
    const support = annotationSupport('flightsql');
    expect(support.getDefaultQuery!()).toEqual({ rawSql: '', format: 'table' });
    expect(support.prepareQuery!(anno({ refId: '', rawSql: 'SELECT 1', format: 'time_series' }))).toEqual({
      refId: 'Anno',
      rawSql: 'SELECT 1',
      format: 'table',
    });
    expect(support.prepareQuery!(anno())).toBeUndefined();
  });

  it('runs demo annotations as the events scenario and turns frames into events', async () => {
    const support = new DataSource(instanceSettings()).annotations!;
    expect(support.prepareQuery!(anno({ refId: 'X', seriesCount: 3 }))).toEqual({
      refId: 'X',
      scenario: 'events',
      seriesCount: 3,
      seed: 1,
    });
    // a new annotation left at its defaults is saved without a target
    expect(support.prepareQuery!(anno())).toEqual({ refId: 'Anno', scenario: 'events', seriesCount: 10, seed: 1 });
    const frame = createDataFrame({
      fields: [
        { name: 'time', type: FieldType.time, values: [5] },
        { name: 'text', type: FieldType.string, values: ['t'] },
      ],
    });
    expect(await lastValueFrom(support.processEvents!(anno(), [frame]))).toEqual([
      { time: 5, timeEnd: 5, isRegion: false, text: 't', tags: [] },
    ]);
  });
});
