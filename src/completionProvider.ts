import type { Monaco, monacoTypes } from '@grafana/ui';

import { CompletionKind, completions, SchemaSource } from './completion';

/**
 * A Monaco completion provider for the SQL of one editor: it answers only for model (Monaco keeps
 * providers per language, so every SQL editor on the page sees every request) and offers
 * completions(). A `$` before the word is replaced with it, so macros are not typed twice.
 */
export function completionProvider(
  monaco: Pick<Monaco, 'languages'>,
  schema: SchemaSource,
  isOwnModel: (model: monacoTypes.editor.ITextModel) => boolean
): monacoTypes.languages.CompletionItemProvider {
  const K = monaco.languages.CompletionItemKind;
  const kinds: Record<CompletionKind, monacoTypes.languages.CompletionItemKind> = {
    table: K.Class,
    column: K.Field,
    macro: K.Function,
    keyword: K.Keyword,
  };
  return {
    triggerCharacters: [' ', '.', '$', ','],
    provideCompletionItems: async (model, position) => {
      if (!isOwnModel(model)) {
        return { suggestions: [] };
      }
      const word = model.getWordUntilPosition(position);
      const line = model.getLineContent(position.lineNumber);
      let startColumn = word.startColumn;
      while (startColumn > 1 && /[$_]/.test(line[startColumn - 2])) {
        startColumn--;
      }
      const range = {
        startLineNumber: position.lineNumber,
        endLineNumber: position.lineNumber,
        startColumn,
        endColumn: word.endColumn,
      };
      const items = await completions(model.getValue(), model.getOffsetAt(position), schema);
      return {
        suggestions: items.map((c, i) => ({
          label: c.label,
          kind: kinds[c.kind],
          detail: c.detail,
          insertText: c.insertText,
          range,
          sortText: String(i).padStart(4, '0'),
        })),
      };
    },
  };
}
