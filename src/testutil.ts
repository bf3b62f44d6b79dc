import { DataSourceInstanceSettings, PluginType } from '@grafana/data';

import { QuiverOptions } from './types';

/** Instance settings of a Quiver data source, as Grafana passes them to the DataSource constructor. */
export function instanceSettings(jsonData: QuiverOptions = {}): DataSourceInstanceSettings<QuiverOptions> {
  return {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- still required by the type
    id: 1,
    uid: 'quiver-test',
    type: 'quiver-arrow-datasource',
    name: 'Quiver',
    access: 'proxy',
    readOnly: false,
    jsonData,
    meta: {
      id: 'quiver-arrow-datasource',
      name: 'Quiver',
      type: PluginType.datasource,
      module: '',
      baseUrl: '',
      info: {
        author: { name: 'Quiver' },
        description: '',
        links: [],
        logos: { small: '', large: '' },
        screenshots: [],
        updated: '',
        version: '',
      },
    },
  };
}
