"""Reading measured points: every accepted form, and errors that name the line and column."""

import pytest

from dpscale.fit.data import (
    NOT_A_PAIR,
    Points,
    parse_device_counts,
    parse_points,
    points_from_run,
)
from dpscale.validation import InputError

CSV = "devices,throughput\n1,329\n2,620\n8,2456\n16,4896\n"


def message(text: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_points(text)
    return caught.value.issues[0].sentence("points.csv")


def test_csv_with_header_sorted_by_devices() -> None:
    points = parse_points("devices,throughput\n8,2456\n1,329\n2,620\n")
    assert points.devices.tolist() == [1, 2, 8]
    assert points.throughput.tolist() == [329.0, 620.0, 2456.0]


def test_header_columns_in_any_order_extra_columns_ignored() -> None:
    points = parse_points("throughput, run ,Devices\n329,a,1\n620,b,2\n")
    assert points.devices.tolist() == [1, 2]
    assert points.throughput.tolist() == [329.0, 620.0]


def test_repeated_device_counts_are_kept() -> None:
    points = parse_points("devices,throughput\n1,100\n1,102\n4,380\n4,376\n")
    assert points.devices.tolist() == [1, 1, 4, 4]
    assert len(points) == 4
    assert points.distinct_devices.tolist() == [1, 4]


@pytest.mark.parametrize(
    "text",
    [
        "1\t329\n2\t620\n8\t2456\n16\t4896",  # pasted from a spreadsheet
        "devices throughput\n1 329\n2   620\n8 2456\n16 4896",
        "# measured on 2024-05-01\ndevices;throughput\n1;329\n2;620\n\n8;2456\n16;4896\n",
        "\ufeff" + CSV,
        '[{"devices": 1, "throughput": 329}, {"devices": 2, "throughput": 620},'
        ' {"devices": 8, "throughput": 2456}, {"devices": 16, "throughput": 4896}]',
        "[[1, 329], [2, 620], [8, 2456], [16, 4896]]",
        '{"points": [[1, 329], [2, 620], [8, 2456], [16, 4896]]}',
        '{"devices": [1, 2, 8, 16], "throughput": [329, 620, 2456, 4896]}',
    ],
)
def test_every_form_reads_the_same_points(text: str) -> None:
    points = parse_points(text)
    assert points.devices.tolist() == [1, 2, 8, 16]
    assert points.throughput.tolist() == [329.0, 620.0, 2456.0, 4896.0]


def test_csv_round_trip_for_share_links() -> None:
    points = parse_points("devices,throughput\n1,329.5\n16,4896\n")
    assert points.to_csv() == "devices,throughput\n1,329.5\n16,4896"
    again = parse_points(points.to_csv())
    assert again.throughput.tolist() == points.throughput.tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "devices,throughput\n1,329\n2,abc\n",
            "points.csv: line 3, throughput: 'abc' is not a number",
        ),
        ("devices,throughput\n1,329\n2\n", "points.csv: line 3, throughput: missing value"),
        ("devices,throughput\n1,329\n,620\n", "points.csv: line 3, devices: missing value"),
        (
            "devices,throughput\n1,329\n2.5,620\n",
            "points.csv: line 3, column devices must be a whole number from 1 to 10,000,000 "
            "(got 2.5)",
        ),
        (
            "devices,throughput\n0,329\n2,620\n",
            "points.csv: line 2, column devices must be a whole number from 1 to 10,000,000 "
            "(got 0)",
        ),
        (
            "devices,throughput\n1,329\n2,-620\n",
            "points.csv: line 3, column throughput must be a number greater than 0 and "
            "at most 1e+15 (got -620)",
        ),
        (
            "devices,throughput\n1,329\n2,nan\n",
            "points.csv: line 3, column throughput must be a number greater than 0 and "
            "at most 1e+15 (got nan)",
        ),
        (
            "gpus,samples\n1,329\n",
            "points.csv: line 1: the header must name the columns devices and throughput "
            "(missing devices, throughput; found gpus, samples)",
        ),
        (
            "devices,throughput\n8,700\n8,712\n",
            "points.csv: measurements at two or more different device counts are needed "
            "(got only 8 devices)",
        ),
        (
            "devices,throughput\n1,329\n1,330\n",
            "points.csv: measurements at two or more different device counts are needed "
            "(got only 1 device)",
        ),
        (
            "devices,throughput\n",
            "points.csv: measurements at two or more different device counts are needed "
            "(got no points)",
        ),
        (
            '[{"devices": 1, "throughput": 329}, {"devices": 2}]',
            "points.csv: item 2, throughput: missing value",
        ),
        (
            '[{"devices": 1, "throughput": 329}, {"devices": true, "throughput": 5}]',
            "points.csv: item 2, devices: true is not a number",
        ),
        ('{"devices": [1, 2', "points.csv: line 1, column 18: Expecting ',' delimiter"),
        (
            '{"nothing": 1}',
            'points.csv: JSON must be a list of {"devices": ..., "throughput": ...} objects '
            'or an object with a "points" list',
        ),
    ],
)
def test_bad_input_names_line_and_column(text: str, expected: str) -> None:
    assert message(text) == expected


def test_too_many_points_refused() -> None:
    text = "devices,throughput\n" + "\n".join(f"{d % 64 + 1},{d + 1}" for d in range(10_001))
    assert message(text) == "points.csv: at most 10,000 points are accepted (got 10,001)"


def test_points_of_pairs_checked_like_text() -> None:
    with pytest.raises(InputError, match=r"point 2, column devices must be a whole number"):
        Points.of([(1, 10.0), (-4, 36.0)])


def test_points_from_a_stored_run() -> None:
    run = {
        "run_id": "r1",
        "backend": "gloo",
        "results": [
            {"devices": 1, "throughput": 10.0, "per_device_throughput": 10.0, "efficiency": 1},
            {"devices": 2, "throughput": 19.0, "per_device_throughput": 9.5, "efficiency": 0.95},
        ],
        "collectives": [],
    }
    points = points_from_run(run)
    assert points.devices.tolist() == [1, 2]
    assert points.throughput.tolist() == [10.0, 19.0]


def test_device_counts_to_predict_at() -> None:
    assert parse_device_counts("256, 128 64;1024") == (64, 128, 256, 1024)
    assert parse_device_counts("") == ()
    # Ranges as predict --devices writes them: every count, and doubling to the end.
    assert parse_device_counts("64..1000, 30-32") == (30, 31, 32, 64, 128, 256, 512, 1000)
    for text, said in (
        (
            "512-64",
            "--at: counts must be whole numbers from 1 to 10,000,000, ranges low to high "
            "(got '512-64')",
        ),
        ("1-500", "--at: at most 200 device counts are accepted (got 500)"),
        ("1..512,1-199", "--at: at most 200 device counts are accepted (got 201)"),
        # Python's digit separator is no plain number: float() had read it as 1,024.
        ("64,1_024", "--at must be a whole number from 1 to 10,000,000 (got 1_024)"),
    ):
        with pytest.raises(InputError) as caught:
            parse_device_counts(text)
        assert caught.value.issues[0].sentence("--at") == said
    with pytest.raises(InputError) as caught:
        parse_device_counts("64,zero")
    assert caught.value.issues[0].sentence("--at") == (
        "--at must be a whole number from 1 to 10,000,000 (got zero)"
    )


@pytest.mark.parametrize("text", ["1:329,2:620,8:2456,16:4896", "1:329, 2:620\n8:2456\n16 : 4896"])
def test_device_throughput_pairs_as_predict_measured_takes_them(text: str) -> None:
    points = parse_points(text)
    assert points.devices.tolist() == [1, 2, 8, 16]
    assert points.throughput.tolist() == [329.0, 620.0, 2456.0, 4896.0]
    assert parse_points(text).throughput.tolist() == parse_points(CSV).throughput.tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:329,2:abc", "points.csv: item 2, throughput: 'abc' is not a number"),
        (
            "1:329\n8 2456",
            "points.csv: line 2: '8 2456' is not a devices:throughput pair like 8:2722",
        ),
        (
            "1:329,0:10",
            "points.csv: item 2, column devices must be a whole number from 1 to "
            "10,000,000 (got 0)",
        ),
        (
            "gpus," + ",".join(f"col{i}" for i in range(100)) + "\n1,2\n",
            "points.csv: line 1: the header must name the columns devices and throughput "
            "(missing devices, throughput; found gpus, col0, col1, col2, col3, col4, col5, "
            "col6, col7, col...)",
        ),
    ],
)
def test_bad_pairs_and_long_headers_are_named_briefly(text: str, expected: str) -> None:
    assert message(text) == expected


def test_an_inline_pair_is_named_by_its_place_and_a_huge_value_briefly() -> None:
    # "1:329,2:620,8:-5" had been "line 1"; 1e300 had been quoted as a 301-digit integer.
    with pytest.raises(InputError) as caught:
        parse_points("1:329,2:620,8:-5")
    assert str(caught.value).startswith("points: item 3, column throughput must be")
    assert str(caught.value).endswith("(got -5)")
    with pytest.raises(InputError) as caught:
        parse_points("8:1e300,16:2e300")
    assert str(caught.value).endswith("(got 1e300)")
    # As typed: 2e15 had been shown as 2000000000000000.0; a long cell is shortened.
    with pytest.raises(InputError) as caught:
        parse_points("8:2e15,16:1")
    assert str(caught.value).endswith("(got 2e15)")
    with pytest.raises(InputError) as caught:
        parse_points("8:" + "9" * 60 + ",16:1")
    assert str(caught.value).endswith("(got " + "9" * 37 + "...)")


def test_a_spreadsheet_with_a_decimal_comma_reads_as_it_was_written() -> None:
    # Excel in German or French writes semicolons between cells and a comma as the decimal
    # point: it had been split at the comma and refused as a header missing its columns.
    points = parse_points("devices;throughput\n1;329,5\n2;620\n8;2456,25\n")
    assert points.throughput.tolist() == [329.5, 620.0, 2456.25]
    assert parse_points("1\t329,5\n2\t620").throughput.tolist() == [329.5, 620.0]


@pytest.mark.parametrize(
    ("text", "where", "item", "expected"),
    [
        # A decimal comma in English pairs, and a pair without its throughput: the header's
        # message ("the header must name the columns devices and throughput") had said nothing
        # of either.
        ("8:7,5,16:15", "item", 2, "item 2: '5' is not a devices:throughput pair like 8:2722"),
        ("8:7900, 16", "item", 2, "item 2: '16' is not a devices:throughput pair like 8:2722"),
        (
            "1:329, 2:620\n8:2456, 16, 32:9000",
            "item",
            4,
            "item 4: '16' is not a devices:throughput pair like 8:2722",
        ),
        ("1:329\n16", "line", 2, "line 2: '16' is not a devices:throughput pair like 8:2722"),
        (
            "8:7900:16",
            "line",
            1,
            "line 1: '8:7900:16' is not a devices:throughput pair like 8:2722",
        ),
    ],
)
def test_an_item_that_is_no_pair_is_named(text: str, where: str, item: int, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_points(text)
    issue = caught.value.issues[0]
    assert issue.code == NOT_A_PAIR
    assert issue.sentence("--points") == f"--points: {expected}"
    assert issue.ctx[where] == item
    assert issue.ctx["text"] == expected.split("'")[1]


def test_pairs_that_read_are_unchanged_by_the_pair_check() -> None:
    points = parse_points("8:7.5,16:15")
    assert points.devices.tolist() == [8, 16]
    assert points.throughput.tolist() == [7.5, 15.0]


# --- JSON that had lost data without a word -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # both forms in one object: the columns had been read, the points dropped
            '{"points": [[8, 7900], [16, 15500], [32, 30200]], "devices": [1, 2], '
            '"throughput": [1, 2]}',
            'points.csv: the JSON object holds points in "points" and in its "devices" and '
            '"throughput" lists: keep one of them',
        ),
        (
            '{"points": [[8, 7900], [16, 15500]], "results": [[1, 1], [2, 2]]}',
            'points.csv: the JSON object holds points in "points" and in "results": keep one '
            "of them",
        ),
        (  # read last-wins, the point had been at 64 devices
            '[{"devices": 8, "throughput": 7900, "devices": 64}, '
            '{"devices": 16, "throughput": 15500}]',
            "points.csv: the key 'devices' is given twice in one object (one value each)",
        ),
        (  # a text had been read as a number; runs import refuses it
            '[{"devices": 8, "throughput": "7900"}, {"devices": 16, "throughput": 15500}]',
            "points.csv: item 1, throughput: '7900' is a text, not a number: write the JSON "
            "number without quotes",
        ),
        (
            '[[8, 7900], ["16", 15500]]',
            "points.csv: item 2, devices: '16' is a text, not a number: write the JSON number "
            "without quotes",
        ),
        (
            '{"devices": [8, "16"], "throughput": [7900, 15500]}',
            "points.csv: item 2, devices: '16' is a text, not a number: write the JSON number "
            "without quotes",
        ),
    ],
)
def test_json_that_would_lose_data_is_refused(text: str, expected: str) -> None:
    assert message(text) == expected


def test_json_object_of_a_stored_run_still_reads_its_results() -> None:
    points = parse_points(
        '{"run_id": "r", "devices": 2, "results": [{"devices": 1, "throughput": 329}, '
        '{"devices": 2, "throughput": 620}]}'
    )
    assert points.devices.tolist() == [1, 2]
    assert points.throughput.tolist() == [329.0, 620.0]


# --- CSV quoting (RFC 4180), read by the csv module -----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '"devices","throughput"\n"1","329"\n"2","620"\n"8","2456"\n"16","4896"\n',  # QUOTE_ALL
        '"devices","throughput"\r\n1,"329"\r\n2,620\r\n8,2456\r\n16,"4896"\r\n',
        'devices,note,throughput\n1,"two\nlines",329\n2,"a, b",620\n8,"say ""hi""",2456\n'
        "16,,4896\n",
        '"devices";"throughput"\n"1";"329,0"\n2;620\n8;2456\n16;4896\n',
        '"devices"\t"throughput"\n1\t"329"\n2\t620\n8\t2456\n16\t4896\n',
    ],
)
def test_quoted_csv_reads_the_same_points(text: str) -> None:
    points = parse_points(text)
    assert points.devices.tolist() == [1, 2, 8, 16]
    assert points.throughput.tolist() == [329.0, 620.0, 2456.0, 4896.0]


def test_csv_module_writes_what_fit_reads() -> None:
    import csv
    import io

    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_ALL)
    writer.writerows([("devices", "note", "throughput"), (8, "first\nrun", 7900), (16, "", 15500)])
    points = parse_points(stream.getvalue())
    assert points.devices.tolist() == [8, 16]
    assert points.throughput.tolist() == [7900.0, 15500.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # the quoted number had been split at its comma
            'devices,throughput\n8,"7,900"\n16,15500\n',
            "points.csv: line 2, throughput: '7,900' has a comma inside the number, which "
            "reads as 7900 or 7.9: write the number without it (a decimal point, not a comma)",
        ),
        (
            'devices,throughput\n8,"7,900.5"\n16,15500\n',
            "points.csv: line 2, throughput: '7,900.5' has a comma inside the number, which "
            "reads as 7900.5: write the number without it (a decimal point, not a comma)",
        ),
        (  # a quoted line break is inside its record: the lines after it keep their numbers
            'devices,note,throughput\n8,"two\nlines",7900\n16,x,-5\n',
            "points.csv: line 4, column throughput must be a number greater than 0 and at "
            "most 1e+15 (got -5)",
        ),
        (  # the bad cell stands on the record's second line
            'devices,note,throughput\n8,"two\nlines",abc\n16,x,15500\n',
            "points.csv: line 3, throughput: 'abc' is not a number",
        ),
        (
            'devices,throughput\n8,"7900\n16,15500\n',
            "points.csv: line 2: a quoted cell opened on this line is never closed (a quote "
            'inside a quoted cell is written twice: "")',
        ),
        (
            'devices,throughput\n8,7900\n"16" x,15500\n',
            "points.csv: line 3: a quoted cell must end at its closing quote, the separator or "
            'the line\'s end right after it (as in "8","7900")',
        ),
        (  # a repeated column: the first had been used, the second ignored
            "devices,throughput,devices\n8,7900,64\n16,15500,128\n",
            "points.csv: line 1: the header names the column devices 2 times (columns 1, 3); "
            "name each column once",
        ),
        (
            '"Throughput";devices;"throughput"\n1;2;3\n',
            "points.csv: line 1: the header names the column throughput 2 times (columns 1, "
            "3); name each column once",
        ),
    ],
)
def test_quoted_csv_errors_name_the_line(text: str, expected: str) -> None:
    assert message(text) == expected
