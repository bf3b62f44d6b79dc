import { Observable, of } from 'rxjs';
import { AnnotationEvent, AnnotationQuery, AnnotationSupport, DataFrame, Field, FieldType } from '@grafana/data';

import { AnnotationQueryEditor } from './components/AnnotationQueryEditor';
import { QuiverQuery, Upstream } from './types';

/** Query a new annotation starts with on a Demo data source: its deploys and incidents. */
export const defaultDemoAnnotationQuery: Partial<QuiverQuery> = { scenario: 'events', seriesCount: 10, seed: 1 };

/** Query a new annotation starts with on a Flight SQL data source. */
export const defaultSQLAnnotationQuery: Partial<QuiverQuery> = { rawSql: '', format: 'table' };

/** Column names an annotation query is read by (Grafana's SQL data sources use the same). */
export const annotationColumns = {
  time: ['time'],
  timeEnd: ['timeEnd', 'timeend', 'time_end'],
  text: ['text'],
  title: ['title'],
  tags: ['tags'],
  id: ['id'],
};

function field(frame: DataFrame, names: string[], fallback?: (f: Field) => boolean): Field | undefined {
  return frame.fields.find((f) => names.includes(f.name)) ?? (fallback ? frame.fields.find(fallback) : undefined);
}

/**
 * Epoch milliseconds of a time value: a number, a Date or a date string. A number of the magnitude of
 * epoch seconds (1e9 to 1e10) or nanoseconds (1e18 to 1e19) is scaled to milliseconds, as Grafana's
 * SQL data sources do (epochPrecisionToMS); other numbers are milliseconds.
 */
function millis(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) {
    const magnitude = v.toExponential().split('e')[1];
    return magnitude === '+9' ? v * 1e3 : magnitude === '+18' ? v / 1e6 : v;
  }
  if (v instanceof Date) {
    return v.getTime();
  }
  if (typeof v === 'string' && v !== '') {
    const n = Date.parse(v);
    return Number.isNaN(n) ? undefined : n;
  }
  return undefined;
}

/**
 * The tags of one row as a list: a list value (an SQL array arrives as JSON), a JSON list in a
 * string, or a comma-separated string. Empty tags are dropped.
 */
export function tagList(v: unknown): string[] {
  let list: unknown[] = [];
  if (Array.isArray(v)) {
    list = v;
  } else if (typeof v === 'string') {
    const s = v.trim();
    if (s.startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(s);
        list = Array.isArray(parsed) ? parsed : [s];
      } catch {
        list = s.split(',');
      }
    } else {
      list = s.split(',');
    }
  }
  return list
    .filter((t) => t !== null && t !== undefined)
    .map((t) => String(t).trim())
    .filter((t) => t !== '');
}

/**
 * Annotation events from the frames of an annotation query: the time is the column `time` (else
 * the first time column), the end `timeEnd` (a later end makes a region), the text `text` (else
 * the first text column), `title`, `tags` (a list, JSON list or comma-separated text) and `id`.
 * Rows without a time are left out.
 */
export function annotationEvents(frames: DataFrame[]): AnnotationEvent[] {
  const events: AnnotationEvent[] = [];
  for (const frame of frames) {
    const time = field(frame, annotationColumns.time, (f) => f.type === FieldType.time);
    if (!time) {
      continue;
    }
    const timeEnd = field(frame, annotationColumns.timeEnd);
    const text = field(frame, annotationColumns.text, (f) => f.type === FieldType.string);
    const title = field(frame, annotationColumns.title);
    const tags = field(frame, annotationColumns.tags);
    const id = field(frame, annotationColumns.id);
    for (let i = 0; i < time.values.length; i++) {
      const start = millis(time.values[i]);
      if (start === undefined) {
        continue;
      }
      const end = timeEnd ? millis(timeEnd.values[i]) : undefined;
      const event: AnnotationEvent = { time: start, timeEnd: end ?? start, isRegion: end !== undefined && end > start };
      if (text && text.values[i] !== null && text.values[i] !== undefined) {
        event.text = String(text.values[i]);
      }
      if (title && title.values[i] !== null && title.values[i] !== undefined) {
        event.title = String(title.values[i]);
      }
      event.tags = tags ? tagList(tags.values[i]) : [];
      if (id && id.values[i] !== null && id.values[i] !== undefined) {
        event.id = String(id.values[i]);
      }
      events.push(event);
    }
  }
  return events;
}

/** Annotation support: annotation queries run on the backend as tables and are read by annotationEvents. */
export function annotationSupport(upstream: Upstream): AnnotationSupport<QuiverQuery> {
  const defaults = upstream === 'flightsql' ? defaultSQLAnnotationQuery : defaultDemoAnnotationQuery;
  return {
    QueryEditor: AnnotationQueryEditor,
    getDefaultQuery: () => defaults,
    // A Flight SQL annotation runs its SQL, none before it has a target; a demo one runs its defaults.
    prepareQuery: (anno: AnnotationQuery<QuiverQuery>) => {
      const target = anno.target;
      if (upstream === 'flightsql') {
        return target ? { ...target, refId: target.refId || 'Anno', format: 'table' } : undefined;
      }
      return { ...defaults, ...target, refId: target?.refId || 'Anno', scenario: 'events' };
    },
    processEvents: (_anno: AnnotationQuery<QuiverQuery>, frames: DataFrame[]): Observable<AnnotationEvent[]> =>
      of(annotationEvents(frames)),
  };
}
