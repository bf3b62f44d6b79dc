import React, { useRef } from 'react';
import { CodeEditor } from '@grafana/ui';

import { DataSource } from '../datasource';
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
  editorRef?: React.MutableRefObject<Editor | null>;
}

/** The SQL editor of panel, variable and annotation queries. */
export function SQLCodeEditor({ value, onChange, testId, height = 200, editorRef }: Props) {
  const own = useRef<Editor | null>(null);
  const ref = editorRef ?? own;
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
        onEditorDidMount={(editor) => {
          ref.current = editor;
        }}
      />
    </Wrap>
  );
}
