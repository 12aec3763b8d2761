/**
 * Every user-facing string of the panel goes through JupyterLab's
 * ITranslator (`trans.__()`, `trans._n()`), so a language pack can translate
 * the panel. This reads the sources with the TypeScript parser.
 *
 * Components (components/*.tsx): it fails on a bare string where the user
 * would see or hear it: JSX text, a string literal or template put into JSX,
 * and the attributes that assistive technology reads (aria-label, title,
 * placeholder, alt...). A string without letters (a symbol, a key such as
 * "E") and what a <code> or <kbd> element holds are not text to translate.
 *
 * Every module (each .ts/.tsx under labextension_src but the tests, the
 * generated contract and the version) builds lines a user sees: labels,
 * command captions, notifications, errors, badges, tooltips. There it fails
 * on any literal or template that reads as words (a space between words, or
 * a capitalised word) unless it is an argument of a translation call, and
 * on a translation call whose message is not a literal (`trans.__(TABLE[k])`:
 * extraction tools cannot read it). Wire values pass: single lower-case
 * identifiers (event types, statuses, URL paths, storage keys), compared
 * keys and error names, CSS selectors and class names, code examples, a
 * plugin's description; a console message is for developers and passes.
 * CONTENT_TEXT lists the modules whose words are content (model input, a
 * notebook's Markdown), with why.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as ts from 'typescript';

const SOURCES = path.resolve(__dirname, '../../../labextension_src');
const COMPONENTS = path.join(SOURCES, 'components');
const MODEL = path.join(SOURCES, 'model');

/** Attributes whose value is read out or shown. */
const SPOKEN = new Set(['aria-label', 'aria-valuetext', 'aria-description', 'title', 'placeholder', 'alt', 'label']);

/** A string a user would read: it has a word in it (two letters or more). */
function isText(value: string): boolean {
  return /\p{L}{2,}/u.test(value);
}

/** Strings left as they are, with why. */
const ALLOWED = new Set([
  'Cellwright', // the product's name
  'Content-Type', // an HTTP header
  'Last-Event-ID', // an HTTP header
  'AbortError', // a DOMException's name
  'Stopped by the user' // the server's summary of a stopped step, compared, never shown
]);

/** Code shown as an example (JSON) or markup (an SVG icon): not words to translate. */
function isCode(value: string): boolean {
  if (/^<svg[\s>]/.test(value)) {
    return true;
  }
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'object' && parsed !== null;
  } catch {
    return false;
  }
}

/** Reads as words: a space in it (between words, or a word and a placeholder), or a capitalised word ("Agent"). */
function readsAsWords(value: string): boolean {
  return isText(value) && !isCode(value) && (/\s/.test(value) || /^\p{Lu}\p{Ll}/u.test(value));
}

/** A call whose arguments are words already handled: a translation (`trans.__`) or a console message. */
const TRANSLATION_CALLS = new Set(['__', '_n', '_p', '_np', 'gettext', 'ngettext', 'pgettext', 'npgettext']);

function isHandledCall(node: ts.Node): boolean {
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) {
    return false;
  }
  const { expression, name } = node.expression;
  return TRANSLATION_CALLS.has(name.text) || (ts.isIdentifier(expression) && expression.text === 'console');
}

/** DOM calls whose string argument is a CSS selector, not text. */
const SELECTOR_CALLS = new Set(['querySelector', 'querySelectorAll', 'closest', 'matches']);

/**
 * A literal that is a wire value by where it stands: compared (`event.key ===
 * 'Enter'`, `error.name === 'AbortError'`), a `case` label, a CSS selector
 * (a selector call's argument, a `selector:` property) or a class name.
 */
function isWirePosition(node: ts.Node): boolean {
  const parent = node.parent;
  if (!parent) {
    return false;
  }
  if (ts.isParenthesizedExpression(parent) || ts.isConditionalExpression(parent)) {
    return ts.isConditionalExpression(parent) && parent.condition === node ? false : isWirePosition(parent);
  }
  if (ts.isBinaryExpression(parent)) {
    const op = parent.operatorToken.kind;
    const compared = [
      ts.SyntaxKind.EqualsEqualsEqualsToken,
      ts.SyntaxKind.ExclamationEqualsEqualsToken,
      ts.SyntaxKind.EqualsEqualsToken,
      ts.SyntaxKind.ExclamationEqualsToken
    ].includes(op);
    const className =
      op === ts.SyntaxKind.EqualsToken &&
      ts.isPropertyAccessExpression(parent.left) &&
      parent.left.name.text === 'className';
    return compared || className;
  }
  if (ts.isCaseClause(parent)) {
    return parent.expression === node;
  }
  if (ts.isPropertyAssignment(parent) && parent.initializer === node) {
    return ['selector', 'className'].includes(parent.name.getText());
  }
  if (ts.isCallExpression(parent) && ts.isPropertyAccessExpression(parent.expression)) {
    return SELECTOR_CALLS.has(parent.expression.name.text);
  }
  return false;
}

/** A plugin's `description` (JupyterLab's plugin metadata, untranslated in core too). */
function isPluginDescription(node: ts.Node): boolean {
  const parent = node.parent;
  return (
    !!parent &&
    ts.isPropertyAssignment(parent) &&
    parent.name.getText() === 'description' &&
    ts.isObjectLiteralExpression(parent.parent) &&
    parent.parent.properties.some(p => p.name?.getText() === 'activate')
  );
}

/**
 * A translation call whose message is not written in it (`trans.__(TABLE[k])`):
 * extraction tools read only literals, so that text is never translated.
 */
function hasUnextractableMessage(node: ts.Node): boolean {
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) {
    return false;
  }
  if (!TRANSLATION_CALLS.has(node.expression.name.text)) {
    return false;
  }
  const literals = node.expression.name.text.startsWith('_n') || node.expression.name.text.startsWith('n') ? 2 : 1;
  const offset = node.expression.name.text.includes('p') ? 1 : 0; // a context comes first
  return node.arguments
    .slice(0, literals + offset)
    .some(arg => !ts.isStringLiteral(arg) && !ts.isNoSubstitutionTemplateLiteral(arg));
}

/** The bare strings of a model module that read as words (see the top of this file). */
export function unwrappedInModel(file: string, source: string): string[] {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, kind);
  const found: string[] = [];
  const report = (node: ts.Node, text: string): void => {
    if (readsAsWords(text.trim()) && !ALLOWED.has(text.trim())) {
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      found.push(`${path.basename(file)}:${line + 1}: ${JSON.stringify(text.trim().slice(0, 60))}`);
    }
  };
  const visit = (node: ts.Node): void => {
    if (hasUnextractableMessage(node)) {
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      found.push(`${path.basename(file)}:${line + 1}: not a literal: ${node.getText(sf).slice(0, 60)}`);
    }
    if (
      ts.isImportDeclaration(node) ||
      ts.isExportDeclaration(node) ||
      ts.isLiteralTypeNode(node) ||
      ts.isJsxAttribute(node) ||
      isHandledCall(node)
    ) {
      // Module names, literal types, words already handled; JSX attributes
      // are the component checker's (class names hold spaces, not words).
      return;
    }
    const literal = ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
    if (literal && (isWirePosition(node) || isPluginDescription(node))) {
      return; // a key, an error name, a selector, a class name, plugin metadata
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      report(node, node.text);
    } else if (ts.isTemplateExpression(node)) {
      // A placeholder stands for a word: `${n} tokens` reads as "x tokens".
      report(node, [node.head.text, ...node.templateSpans.map(span => span.literal.text)].join('x'));
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

export function unwrapped(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const found: string[] = [];
  const report = (node: ts.Node, text: string): void => {
    const trimmed = text.trim();
    if (isText(trimmed) && !ALLOWED.has(trimmed)) {
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      found.push(`${path.basename(file)}:${line + 1}: ${JSON.stringify(trimmed.slice(0, 60))}`);
    }
  };
  /** A literal shown as it is: directly, or as a branch of `?:` / `||` / `??`. */
  const shown = (expr: ts.Expression | undefined): void => {
    if (!expr) {
      return;
    }
    if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) {
      report(expr, expr.text);
    } else if (ts.isTemplateExpression(expr)) {
      report(expr, [expr.head.text, ...expr.templateSpans.map(s => s.literal.text)].join(' '));
    } else if (ts.isParenthesizedExpression(expr)) {
      shown(expr.expression);
    } else if (ts.isConditionalExpression(expr)) {
      shown(expr.whenTrue);
      shown(expr.whenFalse);
    } else if (
      ts.isBinaryExpression(expr) &&
      [ts.SyntaxKind.BarBarToken, ts.SyntaxKind.QuestionQuestionToken, ts.SyntaxKind.PlusToken].includes(
        expr.operatorToken.kind
      )
    ) {
      shown(expr.left);
      shown(expr.right);
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isJsxElement(node) && ['code', 'kbd'].includes(node.openingElement.tagName.getText(sf))) {
      return; // code and keys are not text to translate
    }
    if (ts.isJsxText(node)) {
      report(node, node.text);
    } else if (ts.isJsxExpression(node) && node.parent && !ts.isJsxAttribute(node.parent)) {
      shown(node.expression);
    } else if (ts.isJsxAttribute(node)) {
      const name = node.name.getText(sf);
      if (SPOKEN.has(name) && node.initializer) {
        if (ts.isStringLiteral(node.initializer)) {
          report(node.initializer, node.initializer.text);
        } else if (ts.isJsxExpression(node.initializer)) {
          shown(node.initializer.expression);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

test('the checker finds bare strings and lets wrapped ones pass', () => {
  const source = `
    const a = <div title="Bare title">Bare text {'bare literal'} {x ? 'yes it is' : trans.__('wrapped')}</div>;
    const b = <button aria-label={trans.__('Wrapped label')}>{trans.__('Wrapped')} <kbd>E</kbd> ⋯</button>;
    const c = <span>{\`Bare \${n} template\`}</span>;
  `;
  const found = unwrapped('x.tsx', source);
  assert.equal(found.length, 5, found.join('\n'));
});

test('the model checker finds words outside translation calls and lets wire values pass', () => {
  const source = `
    import { x } from '../some module';
    type Status = 'Not A Word Here';
    const label = { ask: 'Ask', agent: trans.__('Agent') };
    const line = \`\${n} tokens\`;
    const estimated = \`≈ \${text} (estimated)\`;
    const error = trans.__('Could not %1', 'quoted value here');
    console.warn('Cellwright: a developer message');
    const url = \`threads/\${id}/events\`;
    const kinds = ['awaiting_approval', 'run_cell', 'http://x', 'cellwright:autonomy:'];
    const bare = 'Sent to the model';
  `;
  const found = unwrappedInModel('x.ts', source);
  assert.deepEqual(
    found.map(line => line.replace(/^x\.ts:\d+: /, '')),
    ['"Ask"', '"x tokens"', '"≈ x (estimated)"', '"Sent to the model"']
  );
});

test('the module checker lets keys, selectors and code pass and finds text a translation tool cannot read', () => {
  const source = `
    if (event.key === 'Enter' || error.name !== 'AbortError') {}
    switch (event.key) { case 'ArrowDown': break; }
    node.querySelector(':scope > .jp-CellFooter');
    button.className = 'cw-fix jp-mod-styled';
    menu.addItem({ command, selector: '.jp-Notebook .jp-Cell' });
    const plugin = { id: 'x', description: 'A plugin that does things', activate: () => {} };
    const example = '{"github": {"command": "npx"}}';
    const LABEL = { run_cell: 'run a cell' };
    const action = trans.__(LABEL[name]);
    const counted = trans._n(one, '%1 things', n);
    const fine = trans._n('%1 thing', '%1 things', n);
    menu.addCommand(id, { label: 'Open Cellwright' });
    const badge = p.undone ? 'Cellwright · undone' : 'Cellwright';
    const item = <li>{done && ' — changed since by someone else'}</li>;
  `;
  const found = unwrappedInModel('x.tsx', source).map(line => line.replace(/^x\.tsx:\d+: /, ''));
  assert.deepEqual(found, [
    '"run a cell"',
    'not a literal: trans.__(LABEL[name])',
    'not a literal: trans._n(one, \'%1 things\', n)',
    '"Open Cellwright"',
    '"Cellwright · undone"',
    '"— changed since by someone else"'
  ]);
});

/** Modules that hold only wire values (generated contract types, the version), never text a user sees. */
const WIRE_ONLY = new Set(['contract.gen.ts', 'version.ts']);

/**
 * Modules whose words are not the panel's but content, with why. The check
 * skips them; they must exist, so a rename is noticed here.
 */
const CONTENT_TEXT = new Map([
  // The message sent to the agent (the cell, its outputs, the fix request): model input,
  // in the language of the agent's prompts and tool names, as the server's prompts are.
  ['cellContext.ts', 'model input'],
  ['fixCell.ts', 'model input'],
  // What it writes is the Markdown source of a notebook cell (a file's content); its one
  // piece of panel UI, the held media placeholder, is worded in heldMediaText.ts.
  ['inertMarkdown.ts', 'notebook content']
]);

/** Every .ts/.tsx source under labextension_src, tests aside. */
function sourceFiles(dir: string = SOURCES): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      return entry.name === '__tests__' ? [] : sourceFiles(full);
    }
    const skipped = WIRE_ONLY.has(entry.name) || CONTENT_TEXT.has(entry.name) || entry.name.endsWith('.d.ts');
    return /\.tsx?$/.test(entry.name) && !skipped ? [full] : [];
  });
}

test('every string a module builds for the user goes through the translator', () => {
  const files = sourceFiles();
  assert.ok(files.length > 80, `sources found in ${SOURCES}`);
  for (const name of CONTENT_TEXT.keys()) {
    assert.ok(fs.existsSync(path.join(SOURCES, name)), `${name} (skipped as content) exists`);
  }
  for (const dir of [MODEL, COMPONENTS, path.join(SOURCES, 'widgets'), path.join(SOURCES, 'completion')]) {
    assert.ok(files.some(file => path.dirname(file) === dir), `a source in ${dir}`);
  }
  const found = files.flatMap(file => unwrappedInModel(file, fs.readFileSync(file, 'utf8')));
  assert.deepEqual(found, [], `strings not wrapped in trans.__():\n${found.join('\n')}`);
});

test('a bare label added to a real module is found', () => {
  const file = path.join(SOURCES, 'index.ts');
  const source = fs.readFileSync(file, 'utf8');
  assert.deepEqual(unwrappedInModel(file, source), []);
  const changed = source.replace("label: trans.__('Open Cellwright'),", "label: 'Open Cellwright',");
  assert.notEqual(changed, source, 'the label to unwrap is in index.ts');
  assert.equal(unwrappedInModel(file, changed).length, 1);
});

test('every user-facing string in JSX goes through the translator', () => {
  const files = sourceFiles().filter(file => file.endsWith('.tsx'));
  assert.ok(files.length > 20, `components found in ${COMPONENTS}`);
  const found = files.flatMap(file => unwrapped(path.basename(file), fs.readFileSync(file, 'utf8')));
  assert.deepEqual(found, [], `strings not wrapped in trans.__():\n${found.join('\n')}`);
});
