import React, { useEffect, useMemo, useRef } from 'react';
import { CodeEditor, type monacoTypes } from '@grafana/ui';

import { cachedSchema } from '../completion';
import { completionProvider } from '../completionProvider';
import type { DataSource } from '../datasource';
import { Wrap } from './Wrap';

/** The Monaco editor instance CodeEditor hands to onEditorDidMount. */
export type Editor = Parameters<NonNullable<React.ComponentProps<typeof CodeEditor>['onEditorDidMount']>>[0];

interface Props {
  datasource: DataSource;
  value: string;
  /** Called with the SQL when the editor loses focus or on Ctrl/Cmd+S. */
  onChange: (sql: string) => void;
  testId: string;
  height?: number;
  /** Receives the editor once it is mounted (to insert text at the cursor). */
  onEditor?: (editor: Editor) => void;
}

/**
 * The SQL editor of panel, variable and annotation queries. It completes tables, the columns of
 * the tables in the FROM clause, macros and keywords from the backend's schema resources.
 */
export function SQLCodeEditor({ datasource, value, onChange, testId, height = 200, onEditor }: Props) {
  const schema = useMemo(() => cachedSchema(datasource), [datasource]);
  const registration = useRef<monacoTypes.IDisposable | null>(null);
  useEffect(() => () => registration.current?.dispose(), []);
  return (
    <Wrap testId={testId}>
      <CodeEditor
        language="sql"
        value={value}
        height={height}
        showLineNumbers
        showMiniMap={false}
        onBlur={onChange}
        onSave={onChange}
        onEditorDidMount={(editor, monaco) => {
          onEditor?.(editor);
          registration.current?.dispose();
          registration.current = monaco.languages.registerCompletionItemProvider(
            'sql',
            completionProvider(monaco, schema, (model) => model.id === editor.getModel()?.id)
          );
        }}
      />
    </Wrap>
  );
}
