import React from 'react';

import { DemoEditor } from './query/DemoEditor';
import type { Props } from './query/props';
import { SQLEditor } from './query/SQLEditor';

export type { Props };

/**
 * Query editor: demo scenario and series count, or SQL for a Flight SQL upstream. Its parts live in query/:
 * DemoEditor; SQLEditor (builder or code mode, format) with CodeMode (Monaco, table and column hints) and MacroHelp.
 */
export function QueryEditor(props: Props) {
  return props.datasource.upstream === 'flightsql' ? <SQLEditor {...props} /> : <DemoEditor {...props} />;
}
