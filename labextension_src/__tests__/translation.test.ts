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
 * The model and tokens (model/*.ts, tokens.ts) build the lines the
 * components show (usage, what was sent, undo summaries, labels, errors):
 * there it fails on any literal or template that reads as words (a space
 * between words, or a capitalised word) unless it is an argument of a
 * translation call. Wire values (event types, statuses, URL paths, storage
 * keys) are single lower-case identifiers and pass; a console message is
 * for developers and passes.
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
  'Stopped by the user' // the server's summary of a stopped step, compared, never shown
]);

/** Reads as words: a space in it (between words, or a word and a placeholder), or a capitalised word ("Agent"). */
function readsAsWords(value: string): boolean {
  return isText(value) && (/\s/.test(value) || /^\p{Lu}\p{Ll}/u.test(value));
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

/** The bare strings of a model module that read as words (see the top of this file). */
export function unwrappedInModel(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const report = (node: ts.Node, text: string): void => {
    if (readsAsWords(text.trim()) && !ALLOWED.has(text.trim())) {
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      found.push(`${path.basename(file)}:${line + 1}: ${JSON.stringify(text.trim().slice(0, 60))}`);
    }
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isImportDeclaration(node) ||
      ts.isExportDeclaration(node) ||
      ts.isLiteralTypeNode(node) ||
      isHandledCall(node)
    ) {
      return; // module names, literal types, and words already handled
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

test('every string the model and tokens build for the user goes through the translator', () => {
  const files = [
    ...fs.readdirSync(MODEL).filter(name => name.endsWith('.ts')).map(name => path.join(MODEL, name)),
    path.join(SOURCES, 'tokens.ts')
  ];
  assert.ok(files.length > 20, `model modules found in ${MODEL}`);
  const found = files.flatMap(file => unwrappedInModel(file, fs.readFileSync(file, 'utf8')));
  assert.deepEqual(found, [], `strings not wrapped in trans.__():\n${found.join('\n')}`);
});

test('every user-facing string in the components goes through the translator', () => {
  const files = fs.readdirSync(COMPONENTS).filter(name => name.endsWith('.tsx'));
  assert.ok(files.length > 20, `components found in ${COMPONENTS}`);
  const found = files.flatMap(name => unwrapped(name, fs.readFileSync(path.join(COMPONENTS, name), 'utf8')));
  assert.deepEqual(found, [], `strings not wrapped in trans.__():\n${found.join('\n')}`);
});
