import type { QueryEditorProps } from '@grafana/data';

import type { DataSource } from '../../datasource';
import type { QuiverOptions, QuiverQuery } from '../../types';

/** The props Grafana hands the query editor, and the editor hands each of its parts. */
export type Props = QueryEditorProps<DataSource, QuiverQuery, QuiverOptions>;
