import * as React from 'react';
import { useEffect, useState } from 'react';

import { CellwrightAPI, errorMessage } from '../api';
import { ModelRequestRecord, ModelRequests, SentSummary } from '../contract.gen';
import {
  fetchSent,
  fetchSentText,
  newSources,
  requestLine,
  sentText,
  sourcesText,
  sourceText,
  stepSentLine,
  totalsText
} from '../model/sentRequests';
import { useTrans } from './translation';

/** One request: its line, what it added, and its full text on demand. */
function SentRequest(props: {
  api: CellwrightAPI;
  threadId: string;
  records: ModelRequestRecord[];
  index: number;
}): JSX.Element {
  const { api, threadId, records, index } = props;
  const trans = useTrans();
  const record = records[index];
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const added = newSources(records, index);
  const toggle = (): void => {
    if (text !== null) {
      setText(null);
      return;
    }
    fetchSentText(api, threadId, record.seq).then(
      full => setText(full ? sentText(trans, full) : trans.__('This request is no longer recorded.')),
      reason => setError(errorMessage(trans, reason))
    );
  };
  return (
    <li className="cw-sent-request" data-testid="cw-sent-request">
      <span className="cw-sent-request-line">{requestLine(trans, record)}</span>
      {added.length > 0 && (
        <span className="cw-sent-request-sources">{' · ' + trans.__('new: %1', added.map(source => sourceText(trans, source)).join('; '))}</span>
      )}{' '}
      <button className="cw-link-button" onClick={toggle} data-testid="cw-sent-request-text-toggle">
        {text === null ? trans.__('Show text') : trans.__('Hide text')}
      </button>
      {error && <span className="cw-sent-error"> {error}</span>}
      {text !== null && (
        <pre className="cw-sent-request-text" data-testid="cw-sent-request-text">
          {text}
        </pre>
      )}
    </li>
  );
}

/**
 * Under a step of the timeline: what its model call's request sent (size,
 * redactions, sources), with the sources and the full text on demand.
 */
export function SentStep(props: { api: CellwrightAPI; threadId: string; sent: SentSummary }): JSX.Element {
  const { api, threadId, sent } = props;
  const trans = useTrans();
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const showText = (): void => {
    fetchSentText(api, threadId, sent.request_seq).then(
      full => setText(full ? sentText(trans, full) : trans.__('This request is no longer recorded.')),
      reason => setError(errorMessage(trans, reason))
    );
  };
  return (
    <details className="cw-sent-step" data-testid="cw-sent-step" data-request-seq={sent.request_seq}>
      <summary>{stepSentLine(trans, sent)}</summary>
      {sent.sources.length > 0 && (
        <ul className="cw-sent-step-sources">
          {sent.sources.map((source, i) => (
            <li key={i}>{sourceText(trans, source)}</li>
          ))}
        </ul>
      )}
      {text === null ? (
        <button className="cw-link-button" onClick={showText} data-testid="cw-sent-step-text-toggle">
          {trans.__('Show the request as sent')}
        </button>
      ) : (
        <pre className="cw-sent-request-text" data-testid="cw-sent-step-text">
          {text}
        </pre>
      )}
      {error && <span className="cw-sent-error"> {error}</span>}
    </details>
  );
}

/**
 * "What was sent": the thread's summary of the data that reached the model
 * and, opened, each model request with its size, redactions, the sources it
 * added, and its full text on demand. Loaded when opened and when a run ends
 * (`version` changes), never while folded.
 */
export function SentRequests(props: {
  api: CellwrightAPI;
  threadId: string | null;
  version: string;
}): JSX.Element | null {
  const { api, threadId, version } = props;
  const trans = useTrans();
  const [open, setOpen] = useState(false);
  const [sent, setSent] = useState<ModelRequests | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setSent(null);
    setError(null);
    if (!open || !threadId) {
      return;
    }
    let alive = true;
    fetchSent(api, threadId).then(
      answer => alive && setSent(answer),
      reason => alive && setError(errorMessage(trans, reason))
    );
    return () => {
      alive = false;
    };
  }, [api, threadId, open, version]);
  if (!threadId) {
    return null;
  }
  return (
    <div className="cw-sent" data-testid="cw-sent">
      <button
        className="cw-link-button cw-sent-toggle"
        onClick={() => setOpen(!open)}
        aria-expanded={open}
        data-testid="cw-sent-toggle"
      >
        {open ? '▾' : '▸'} {trans.__('What was sent to the model')}
      </button>
      {open && error && <div className="cw-sent-error">{error}</div>}
      {open && sent && (
        <>
          <div className="cw-sent-summary" data-testid="cw-sent-summary">
            {sourcesText(trans, sent.summary)}
          </div>
          <div className="cw-sent-totals" data-testid="cw-sent-totals">
            {totalsText(trans, sent.summary)}
          </div>
          <ol className="cw-sent-requests">
            {sent.requests.map((record, index) => (
              <SentRequest
                key={record.seq}
                api={api}
                threadId={threadId}
                records={sent.requests}
                index={index}
              />
            ))}
          </ol>
        </>
      )}
    </div>
  );
}
