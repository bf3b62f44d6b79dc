import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { QuiverOptions, QuiverQuery, QuiverSecureJsonData } from './types';

export const plugin = new DataSourcePlugin<DataSource, QuiverQuery, QuiverOptions, QuiverSecureJsonData>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
