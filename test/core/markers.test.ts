import { CLOSE_MARKER, countLoc, isCodeLine, isMarkerLine, OPEN_MARKER, parseSnippets, readMarkerLine } from '../../core/pset/markers';
import { maskedView } from '../../core/prompt/mask';

describe('countLoc (SPEC 4)', () => {
  it('counts only lines with code before any #, whatever the indentation', () => {
    // Prepare
    const body = [
      '', //                                   blank
      '    \t ', //                            whitespace only
      '# a comment', //                        comment only
      '        # an indented comment', //      comment only
      'x = 1  # note', //                      code then comment: counts once
      '    # <paper2code name="inner">', //    nested marker: a comment line
      '\ty = 2', //                            tab-indented code
      '\t\t# tab-indented comment',
      '    # </paper2code name="inner">',
      'return x + y',
    ];

    // Act
    const loc = countLoc(body);

    // Assess
    expect(loc).toBe(3);
  });

  it('treats # textually, also inside strings', () => {
    // Prepare: the rule is textual on purpose, so that counts match the published ones.
    const lines = {
      hashInString: 's = "a # b"',
      stringStartingWithHash: '"# not a comment"',
      hashLineInsideDocstring: '    # heading inside a triple-quoted string',
      codeThenHash: 'print("#")',
    };

    // Act
    const counted = Object.fromEntries(Object.entries(lines).map(([k, line]) => [k, isCodeLine(line)]));

    // Assess
    expect(counted).toEqual({ hashInString: true, stringStartingWithHash: true, hashLineInsideDocstring: false, codeThenHash: true });
  });

  it('counts an empty body as zero', () => {
    expect(countLoc([])).toBe(0);
  });
});

describe('snippet marker regexes (SPEC 3)', () => {
  it.each([
    ['# <paper2code name="a">', 'a'],
    ['#<paper2code name="a">', 'a'],
    ['  #   <paper2code   name="a">  ', 'a'],
    ['\t#\t<paper2code\tname="block one">\t', 'block one'],
  ])('opens on %j', (line, name) => {
    expect(OPEN_MARKER.exec(line)?.[1]).toBe(name);
    expect(CLOSE_MARKER.test(line)).toBe(false);
  });

  it.each([
    ['# </paper2code name="a">', 'a'],
    ['#</paper2code name="a">', 'a'],
    ['    #  </paper2code   name="a">   ', 'a'],
  ])('closes on %j', (line, name) => {
    expect(CLOSE_MARKER.exec(line)?.[1]).toBe(name);
    expect(OPEN_MARKER.test(line)).toBe(false);
  });

  it.each([
    'x = 1  # <paper2code name="a">', // not a whole line
    '# <paper2code name="a"> trailing text',
    '# <paper2code name=a>',
    '# <paper2code name="">',
    '# <paper2codename="a">',
    '// <paper2code name="a">',
  ])('is not a marker: %j', (line) => {
    expect(OPEN_MARKER.test(line)).toBe(false);
    expect(CLOSE_MARKER.test(line)).toBe(false);
  });
});

describe('parseSnippets (SPEC 3)', () => {
  const parse = (lines: string[]) => parseSnippets(lines, 'paper', 'model.py', 'pset/paper/model.py');

  it('finds nested snippets with their bodies, LoC, indentation and parent', () => {
    // Prepare
    const lines = [
      'def f(x):', //                            1
      '    # <paper2code name="outer">', //      2
      '    a = x + 1', //                        3
      '    # <paper2code name="inner">', //      4
      '        b = a * 2  # double', //          5
      '', //                                     6
      '    # </paper2code name="inner">', //     7
      '    return a + b', //                     8
      '    # </paper2code name="outer">', //     9
    ];

    // Act
    const { snippets, problems } = parse(lines);

    // Assess
    expect(problems).toEqual([]);
    expect(snippets.map((s) => s.name)).toEqual(['outer', 'inner']);
    const [outer, inner] = snippets;
    expect(outer).toEqual({
      paper: 'paper',
      file: 'model.py',
      name: 'outer',
      openLine: 2,
      closeLine: 9,
      markerIndent: '    ',
      bodyIndent: 4,
      body: lines.slice(2, 8),
      loc: 3,
      parent: null,
    });
    expect(inner).toMatchObject({ openLine: 4, closeLine: 7, bodyIndent: 8, body: lines.slice(4, 6), loc: 1, parent: 'outer' });
  });

  it('gives the innermost enclosing snippet as parent, three deep', () => {
    // Prepare
    const lines = [
      '# <paper2code name="a">',
      '# <paper2code name="b">',
      '# <paper2code name="c">',
      'x = 1',
      '# </paper2code name="c">',
      'y = 2',
      '# </paper2code name="b">',
      '# </paper2code name="a">',
    ];

    // Act
    const { snippets, problems } = parse(lines);

    // Assess
    expect(problems).toEqual([]);
    expect(snippets.map((s) => [s.name, s.parent, s.loc])).toEqual([
      ['a', null, 2],
      ['b', 'a', 2],
      ['c', 'b', 1],
    ]);
  });

  it('reports a close with nothing open at its line', () => {
    // Prepare
    const lines = ['x = 1', '# </paper2code name="a">'];

    // Act
    const { snippets, problems } = parse(lines);

    // Assess
    expect(snippets).toEqual([]);
    expect(problems).toEqual([{ path: 'pset/paper/model.py', line: 2, message: 'close marker for "a" with no snippet open' }]);
  });

  it('reports a close whose name differs from the innermost open one', () => {
    // Prepare
    const lines = [
      '# <paper2code name="a">', //   1
      'x = 1', //                     2
      '# </paper2code name="b">', //  3
      '# </paper2code name="a">', //  4
    ];

    // Act
    const { snippets, problems } = parse(lines);

    // Assess
    expect(problems).toEqual([
      { path: 'pset/paper/model.py', line: 3, message: 'close marker for "b" but the innermost open snippet is "a" (opened at line 1)' },
    ]);
    expect(snippets.map((s) => [s.name, s.openLine, s.closeLine])).toEqual([['a', 1, 4]]);
  });

  it('reports an inner snippet left open when an outer one closes over it', () => {
    // Prepare
    const lines = [
      '# <paper2code name="outer">', //  1
      '# <paper2code name="inner">', //  2
      'x = 1', //                        3
      '# </paper2code name="outer">', // 4
    ];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems).toEqual([
      { path: 'pset/paper/model.py', line: 4, message: 'close marker for "outer" but the innermost open snippet is "inner" (opened at line 2)' },
      { path: 'pset/paper/model.py', line: 2, message: 'snippet "inner" is never closed' },
    ]);
  });

  it('reports an indentation mismatch at the close marker', () => {
    // Prepare
    const lines = [
      'def f():', //                       1
      '    # <paper2code name="a">', //    2
      '    return 1', //                   3
      '# </paper2code name="a">', //       4
    ];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems).toEqual([
      { path: 'pset/paper/model.py', line: 4, message: 'close marker for "a" is indented differently from its open marker at line 2' },
    ]);
  });

  it('reports a tab-indented close under a space-indented open as a mismatch', () => {
    // Prepare
    const lines = ['    # <paper2code name="a">', '    x = 1', '\t# </paper2code name="a">'];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems.map((p) => p.line)).toEqual([3]);
  });

  it('reports a snippet never closed at its open marker', () => {
    // Prepare
    const lines = ['x = 0', '# <paper2code name="a">', 'x = 1'];

    // Act
    const { snippets, problems } = parse(lines);

    // Assess
    expect(snippets).toEqual([]);
    expect(problems).toEqual([{ path: 'pset/paper/model.py', line: 2, message: 'snippet "a" is never closed' }]);
  });

  it('reports a duplicate name at the second open marker', () => {
    // Prepare
    const lines = [
      '# <paper2code name="a">', //   1
      'x = 1', //                     2
      '# </paper2code name="a">', //  3
      '# <paper2code name="a">', //   4
      'y = 2', //                     5
      '# </paper2code name="a">', //  6
    ];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems).toEqual([{ path: 'pset/paper/model.py', line: 4, message: 'duplicate snippet name "a" (first opened at line 1)' }]);
  });

  it('reports a snippet with no code lines at its open marker', () => {
    // Prepare
    const lines = [
      'x = 0', //                              1
      '# <paper2code name="empty">', //        2
      '', //                                   3
      '# only a comment', //                   4
      '# <paper2code name="inner">', //        5
      '# </paper2code name="inner">', //       6
      '# </paper2code name="empty">', //       7
    ];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems).toEqual([
      { path: 'pset/paper/model.py', line: 5, message: 'snippet "inner" has no code lines' },
      { path: 'pset/paper/model.py', line: 2, message: 'snippet "empty" has no code lines' },
    ]);
  });

  it('reports every problem of a file, not only the first', () => {
    // Prepare
    const lines = ['# </paper2code name="x">', '# <paper2code name="a">', '# </paper2code name="a">', '# <paper2code name="b">'];

    // Act
    const { problems } = parse(lines);

    // Assess
    expect(problems.map((p) => p.line).sort((a, b) => a - b)).toEqual([1, 2, 4]);
  });
});

describe('malformed markers: one grammar for the reader, the validator and the masked view', () => {
  const parse = (lines: string[]) => parseSnippets(lines, 'paper', 'model.py', 'pset/paper/model.py');
  const lines = (open: string, close: string) => [
    'def f():',
    open,
    '    y = 1',
    close,
    '    # <paper2code name="z">',
    '    return y',
    '    # </paper2code name="z">',
  ];

  it('reports nam="x" on both tags at both lines, and nothing else (the snippet would vanish silently)', () => {
    // Act
    const { snippets, problems } = parse(lines('    # <paper2code nam="x">', '    # </paper2code nam="x">'));
    // Assess
    expect(problems.map((p) => [p.line, p.message.split(';')[0]])).toEqual([
      [2, 'malformed marker: unknown attribute "nam": the only one is name="NAME"'],
      [4, 'malformed marker: unknown attribute "nam": the only one is name="NAME"'],
    ]);
    expect(snippets.map((s) => s.name)).toEqual(['z']);
  });

  it('reports a broken name="x> at its own line, not at the closing line', () => {
    const { problems } = parse(lines('    # <paper2code name="x>', '    # </paper2code name="x">'));
    expect(problems.map((p) => [p.line, p.message.split(';')[0]])).toEqual([[2, "malformed marker: the name's closing quote is missing"]]);
  });

  it.each([
    ['#<paper2cod name="x">', 'misspelt tag "<paper2cod"'],
    ['<paper2code name="x">', 'the marker is not a comment'],
    ['x = 1  # <paper2code name="x">', 'marker text after code'],
    ['# <paper2code name="x"> trailing', 'text after the marker: "trailing"'],
    ["# <paper2code name='x'>", 'the name must be in double quotes'],
    ['# <paper2code name="">', 'the name is empty'],
    ['# <paper2codename="x">', 'no space between the tag and name="NAME"'],
    ['# <paper2 code name="x">', 'no space inside the tag'],
    ['# <paper code name="x">', 'misspelt tag "<paper code"'],
    ['# <pape<2code name="x">', 'misspelt tag "<pape<2code"'],
    ['# <paper2code name = "x">', 'no space around `=`'],
    ['# <paper2code name="x" id="y">', 'unknown attribute "id"'],
    ['# paper2code name="x">', 'the tag has no `<`'],
    ['# </paper2code name="x"', 'the tag is not closed with `>`'],
  ])('%j is a malformed marker: %s', (line, why) => {
    const m = readMarkerLine(line);
    expect(m?.kind).toBe('malformed');
    expect(m && m.kind === 'malformed' && m.problem).toContain(why);
    expect(isMarkerLine(line)).toBe(false);
  });

  it.each(['def fractalar_in64_paper2code(**kwargs):', 'TEST = "paper2code_test.py"', 'x = 1  # a comment', 'html = "<p>"'])('%j is ordinary code', (line) => {
    expect(readMarkerLine(line)).toBeNull();
  });

  it('leaves no marker text in the masked view of a file without problems', () => {
    // The masked view removes exactly the lines the grammar reads as markers.
    const file = { path: 'model.py', lines: lines('    # <paper2code name="x">', '    # </paper2code name="x">'), finalNewline: true };
    const { snippets, problems } = parse(file.lines);
    expect(problems).toEqual([]);
    for (const s of snippets) expect(maskedView(file, s)).not.toMatch(/paper2code/);
  });
});
