/**
 * Every user-facing string of the panel's components goes through
 * JupyterLab's ITranslator (`trans.__()`, `trans._n()`), so a language pack
 * can translate the panel. This reads each component's source with the
 * TypeScript parser and fails on a bare string where the user would see or
 * hear it: JSX text, a string literal or template put into JSX, and the
 * attributes that assistive technology reads (aria-label, title,
 * placeholder, alt...). A string without letters (a symbol, a key such as
 * "E") and what a <code> or <kbd> element holds are not text to translate.
 * A string kept in a variable before it is shown is not seen: wrap it where
 * it is made.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as ts from 'typescript';

const COMPONENTS = path.resolve(__dirname, '../../../labextension_src/components');

/** Attributes whose value is read out or shown. */
const SPOKEN = new Set(['aria-label', 'aria-valuetext', 'aria-description', 'title', 'placeholder', 'alt', 'label']);

/** A string a user would read: it has a word in it (two letters or more). */
function isText(value: string): boolean {
  return /\p{L}{2,}/u.test(value);
}

/** Strings left as they are, with why. */
const ALLOWED = new Set([
  'Cellwright' // the product's name
]);

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

test('every user-facing string in the components goes through the translator', () => {
  const files = fs.readdirSync(COMPONENTS).filter(name => name.endsWith('.tsx'));
  assert.ok(files.length > 20, `components found in ${COMPONENTS}`);
  const found = files.flatMap(name => unwrapped(name, fs.readFileSync(path.join(COMPONENTS, name), 'utf8')));
  assert.deepEqual(found, [], `strings not wrapped in trans.__():\n${found.join('\n')}`);
});
