import * as React from 'react';
import { useEffect, useMemo, useRef, useState } from 'react';

import { isAbort } from '../api';
import { splitCellContext } from '../cellContext';
import { filterCandidates, IMentionCandidate, splitMentions } from '../mentions';
import { MentionSource } from '../mentionSource';
import { useTrans } from './translation';

/** Wait this long after the last keystroke before asking the server. */
const DEBOUNCE_MS = 150;
const MAX_ITEMS = 50;

export interface IMentionItems {
  items: IMentionCandidate[];
  loading: boolean;
  notes: string[];
}

/**
 * The list's items for `query` while `open`: the last answer filtered at
 * once (typing stays instant), and a debounced refetch whose stale
 * predecessor is aborted. Closing aborts too.
 */
export function useMentionItems(
  source: MentionSource,
  open: boolean,
  query: string,
  binding: { path: string; kernelId?: string } | null
): IMentionItems {
  const [raw, setRaw] = useState<IMentionCandidate[]>([]);
  const [notes, setNotes] = useState<string[]>([]);
  const [loading, setLoading] = useState(false);
  // Only the folder part of the query changes what is fetched.
  const folderKey = query.slice(0, query.lastIndexOf('/') + 1);
  const path = binding?.path ?? null;
  const kernelId = binding?.kernelId;
  useEffect(() => {
    if (!open) {
      return;
    }
    const controller = new AbortController();
    setLoading(true);
    const timer = setTimeout(() => {
      source
        .candidates(folderKey, path === null ? null : { path, kernelId }, controller.signal)
        .then(result => {
          setRaw(result.candidates);
          setNotes(result.notes);
          setLoading(false);
        })
        .catch(error => {
          if (!isAbort(error)) {
            setRaw([]);
            setNotes([String(error)]);
            setLoading(false);
          }
        });
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [source, open, folderKey, path, kernelId]);
  const items = useMemo(() => filterCandidates(raw, query, MAX_ITEMS), [raw, query]);
  return { items, loading, notes };
}

/** The id of option `index` of the listbox `listId` (for aria-activedescendant). */
export function optionId(listId: string, index: number): string {
  return `${listId}-option-${index}`;
}

/** The `@` list: a listbox the textbox drives (focus stays in the textbox). */
export function MentionList(props: {
  id: string;
  items: IMentionCandidate[];
  active: number;
  loading: boolean;
  notes: string[];
  onPick: (index: number) => void;
  onHover: (index: number) => void;
}): JSX.Element {
  const { id, items, active, loading, notes } = props;
  const trans = useTrans();
  const listRef = useRef<HTMLUListElement>(null);
  useEffect(() => {
    const node = listRef.current?.querySelector(`#${CSS.escape(optionId(id, active))}`);
    (node as HTMLElement | null)?.scrollIntoView?.({ block: 'nearest' });
  }, [id, active]);
  const empty = !items.length;
  return (
    <div className="cw-mentions" data-testid="cw-mentions">
      <ul
        ref={listRef}
        id={id}
        role="listbox"
        aria-label={trans.__('Variables and files to mention')}
        className="cw-mentions-list"
      >
        {items.map((item, i) => (
          <li
            key={`${item.kind}:${item.name}`}
            id={optionId(id, i)}
            role="option"
            aria-selected={i === active}
            className={`cw-mention-option${i === active ? ' cw-mod-active' : ''}`}
            data-kind={item.kind}
            // Keep the focus (and the caret) in the textbox.
            onMouseDown={e => e.preventDefault()}
            onClick={() => props.onPick(i)}
            onMouseMove={() => i !== active && props.onHover(i)}
          >
            <span className="cw-mention-name">{item.name}</span>
            <span className="cw-mention-detail">
              {item.kind === 'variable' ? item.type + (item.shape ? ` ${item.shape}` : '') : item.type}
            </span>
          </li>
        ))}
      </ul>
      {(empty || notes.length > 0) && (
        <div className="cw-mentions-note" role="status">
          {empty ? (loading ? trans.__('Loading…') : trans.__('Nothing to mention matches')) : ''}
          {notes.map(note => (
            <div key={note}>{note}</div>
          ))}
        </div>
      )}
    </div>
  );
}

/**
 * A sent message with its `@` mentions as chips. Text nodes only (React
 * escapes them): a message is never HTML.
 */
export function MentionText(props: { text: string }): JSX.Element {
  const trans = useTrans();
  const parts = useMemo(() => splitMentions(props.text), [props.text]);
  return (
    <>
      {parts.map((part, i) =>
        part.kind === 'text' ? (
          <React.Fragment key={i}>{part.text}</React.Fragment>
        ) : (
          <span key={i} className="cw-mention-chip" data-testid="cw-mention-chip" title={trans.__('Mentions %1', part.name)}>
            @{part.name}
          </span>
        )
      )}
    </>
  );
}

/**
 * A user's message as sent: mention chips, and a cell attached by "Ask
 * Cellwright about this cell" folded under its label (plain text when open).
 */
export function UserMessageText(props: { text: string }): JSX.Element {
  const trans = useTrans();
  const { question, block, label } = useMemo(() => splitCellContext(props.text), [props.text]);
  return (
    <>
      {question && <MentionText text={question} />}
      {block !== null && (
        <details className="cw-cell-context" data-testid="cw-cell-context">
          <summary>{trans.__('%1 attached', label)}</summary>
          <pre className="cw-code">{block}</pre>
        </details>
      )}
    </>
  );
}
