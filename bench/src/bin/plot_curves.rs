//! Draws the scale curves and prints their tables.
//!
//! ```text
//! cargo run --release -p stategraph-bench --bin plot_curves -- RESULTS_DIR CHART_DIR
//! ```
//!
//! Reads `RESULTS_DIR/stategraph.jsonl` and `RESULTS_DIR/langgraph.jsonl` (written by
//! `bench/curves.sh`; the last line of a scenario and size wins), writes SVG charts to
//! `CHART_DIR` and prints the markdown tables of docs/PERFORMANCE.md ("Scale curves").
//! The SVGs hold their text as `<text>` elements (plotters without its `ttf`
//! feature), so no font is needed to draw them.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

type Error = Box<dyn std::error::Error>;

/// The points of one side: (scenario, size) → its JSON line. A point measured more
/// than once is the run with the median `total_s` (of those that finished; the last
/// line when none did), with `flatness_min` and `flatness_max` over its runs and
/// `runs` added.
type Points = BTreeMap<(String, u64), Value>;

fn load(path: &Path) -> Result<Points, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut runs: BTreeMap<(String, u64), Vec<Value>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let scenario = v["scenario"].as_str().unwrap_or_default().to_string();
        let size = v["size"].as_u64().unwrap_or_default();
        runs.entry((scenario, size)).or_default().push(v);
    }
    let mut points = Points::new();
    for (key, all) in runs {
        let mut done: Vec<Value> = all.iter().filter(|v| ok(v)).cloned().collect();
        let Some(last) = all.last() else { continue };
        if done.is_empty() {
            points.insert(key, last.clone());
            continue;
        }
        done.sort_by(|a, b| {
            let t = |v: &Value| num(v, "total_s").unwrap_or(0.0);
            t(a).total_cmp(&t(b))
        });
        let ratios: Vec<f64> = done
            .iter()
            .filter_map(|v| num(v, "flatness_last_over_first"))
            .collect();
        let mut chosen = done[(done.len() - 1) / 2].clone();
        if let Value::Object(m) = &mut chosen {
            m.insert("runs".into(), done.len().into());
            if let (Some(lo), Some(hi)) = (
                ratios.iter().copied().reduce(f64::min),
                ratios.iter().copied().reduce(f64::max),
            ) {
                m.insert("flatness_min".into(), lo.into());
                m.insert("flatness_max".into(), hi.into());
            }
        }
        points.insert(key, chosen);
    }
    Ok(points)
}

fn ok(v: &Value) -> bool {
    v.get("status").is_none()
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// The (size, `key`) points of `scenario` that finished.
fn series(points: &Points, scenario: &str, key: &str) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter(|((s, _), v)| s == scenario && ok(v))
        .filter_map(|((_, n), v)| Some((*n as f64, num(v, key)?)))
        .collect()
}

const SG: RGBColor = RGBColor(31, 119, 180);
const SG2: RGBColor = RGBColor(44, 160, 44);
const LG: RGBColor = RGBColor(214, 39, 40);
const LG2: RGBColor = RGBColor(255, 127, 14);

struct Line {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

fn line(label: &str, color: RGBColor, points: Vec<(f64, f64)>) -> Line {
    Line {
        label: label.into(),
        color,
        points,
    }
}

fn bounds(lines: &[Line], pick: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let values = lines.iter().flat_map(|l| l.points.iter().map(&pick));
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi { (1.0, 10.0) } else { (lo, hi) }
}

/// Log-log chart of `lines` (sizes on x); `log_y = false` for a linear y from 0.
fn chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    log_y: bool,
) -> Result<(), Error> {
    let root = SVGBackend::new(path, (760, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let (x0, x1) = bounds(lines, |p| p.0);
    let (y0, y1) = bounds(lines, |p| p.1);
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70);
    let x = (x0 / 1.5..x1 * 1.5).log_scale();
    if log_y {
        let mut c = builder.build_cartesian_2d(x, (y0 / 2.0..y1 * 2.0).log_scale())?;
        draw(&mut c, x_desc, y_desc, lines)?;
    } else {
        let mut c = builder.build_cartesian_2d(x, 0.0..y1 * 1.15)?;
        draw(&mut c, x_desc, y_desc, lines)?;
    }
    root.present()?;
    Ok(())
}

fn draw<'a, X, Y>(
    c: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
) -> Result<(), Error>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    c.configure_mesh()
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for l in lines.iter().filter(|l| !l.points.is_empty()) {
        let color = l.color;
        c.draw_series(LineSeries::new(l.points.clone(), color.stroke_width(2)))?
            .label(l.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        c.draw_series(l.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

/// 1500 → "1.5k", 2000000 → "2M", 0.25 → "0.25".
fn short(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    match v.abs() {
        a if a >= 1e6 => format!("{}M", trim(format!("{:.1}", v / 1e6))),
        a if a >= 1e3 => format!("{}k", trim(format!("{:.1}", v / 1e3))),
        a if a >= 1.0 => trim(format!("{v:.1}")),
        _ => trim(format!("{v:.3}")),
    }
}

/// The per-block step times of the longest finished run of each thread curve, x in %
/// of the thread.
fn flatness_chart(path: &Path, sg: &Points, lg: &Points) -> Result<String, Error> {
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    for (side, points, colors) in [("stategraph", sg, [SG, SG2]), ("LangGraph", lg, [LG, LG2])] {
        for (store, color) in [("mem", colors[0]), ("sqlite", colors[1])] {
            let scenario = format!("curve_steps_{store}");
            let longest = points
                .iter()
                .filter(|((s, _), v)| *s == scenario && ok(v))
                .max_by_key(|((_, n), _)| *n);
            let Some(((_, n), v)) = longest else { continue };
            let blocks: Vec<f64> = v["us_per_step_by_20_blocks"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            let k = blocks.len().max(1) as f64;
            let label = format!("{side}, {store}, {} steps", short(*n as f64));
            legend.push(label.clone());
            lines.push(line(
                &label,
                color,
                blocks
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| ((i as f64 + 0.5) / k * 100.0, b))
                    .collect(),
            ));
        }
    }
    let root = SVGBackend::new(path, (760, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let (y0, y1) = bounds(&lines, |p| p.1);
    let mut c = ChartBuilder::on(&root)
        .caption(
            "Long thread: step time along the thread (means of 20 blocks)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..100.0, (y0 / 2.0..y1 * 4.0).log_scale())?;
    draw(
        &mut c,
        "position in the thread (%)",
        "µs per step (in the node)",
        &lines,
    )?;
    root.present()?;
    Ok(legend.join("; "))
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) => {
            let s = format!("{x:.digits$}");
            group(&s)
        }
        None => "–".into(),
    }
}

/// Thousands separators in the integer part.
fn group(s: &str) -> String {
    let (int, frac) = s.split_once('.').map_or((s, None), |(a, b)| (a, Some(b)));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// A point that did not finish, as a table cell.
fn unfinished(v: &Value) -> String {
    let status = v["status"].as_str().unwrap_or("failed");
    let reached = num(v, "progress_us_per_step")
        .map(|r| {
            format!(
                " (reached {} steps at {} µs/step)",
                group(&format!("{}", v["progress_steps"].as_u64().unwrap_or(0))),
                fmt(Some(r), 0)
            )
        })
        .unwrap_or_default();
    match status {
        "timeout" => format!(
            "did not finish in {} min{reached}",
            fmt(num(v, "limit_s").map(|s| s / 60.0), 0)
        ),
        "stopped" => format!(
            "stopped: {}",
            v["error"].as_str().unwrap_or("").replace('|', "/")
        ),
        _ => format!(
            "failed: {}",
            v["error"].as_str().unwrap_or("").replace('|', "/")
        ),
    }
}

fn steps_table(sg: &Points, lg: &Points) {
    println!("#### Long threads (`Durability::Async`)\n");
    println!(
        "| store | steps | side | µs/step, whole run | first 10 % (µs/step, in the node) | last 10 % | last / first | range over runs | checkpoints | storage | peak RSS (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for store in ["mem", "sqlite"] {
        let scenario = format!("curve_steps_{store}");
        let mut sizes: Vec<u64> = sg
            .keys()
            .chain(lg.keys())
            .filter(|(s, _)| *s == scenario)
            .map(|(_, n)| *n)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        for n in sizes {
            for (side, points) in [("stategraph", sg), ("LangGraph", lg)] {
                let Some(v) = points.get(&(scenario.clone(), n)) else {
                    continue;
                };
                let storage = if store == "mem" {
                    format!("{} B of values", fmt(num(v, "stored_value_bytes"), 0))
                } else {
                    format!("{} B/step", fmt(num(v, "db_bytes_per_step"), 0))
                };
                if ok(v) {
                    let range = match (num(v, "flatness_min"), num(v, "flatness_max")) {
                        (Some(lo), Some(hi)) if v["runs"].as_u64().unwrap_or(1) > 1 => format!(
                            "{}–{} ({} runs)",
                            fmt(Some(lo), 2),
                            fmt(Some(hi), 2),
                            v["runs"]
                        ),
                        _ => "1 run".into(),
                    };
                    println!(
                        "| {store} | {} | {side} | {} | {} | {} | **{}** | {range} | {} | {storage} | {} |",
                        group(&n.to_string()),
                        fmt(num(v, "us_per_superstep"), 1),
                        fmt(num(v, "first_10pct_us_per_step"), 1),
                        fmt(num(v, "last_10pct_us_per_step"), 1),
                        fmt(num(v, "flatness_last_over_first"), 2),
                        fmt(num(v, "checkpoints_stored"), 0),
                        fmt(num(v, "peak_rss_mib"), 0),
                    );
                } else {
                    println!(
                        "| {store} | {} | {side} | {} | | | | | | | |",
                        group(&n.to_string()),
                        unfinished(v)
                    );
                }
            }
        }
    }
    println!();
}

fn fanout_table(sg: &Points, lg: &Points) {
    println!("#### Wide fan-out (one superstep of N `Send`s)\n");
    println!(
        "| Sends | stategraph µs/Send | LangGraph µs/Send | LangGraph / stategraph | stategraph peak RSS (MiB) | LangGraph peak RSS (MiB) |"
    );
    println!("|---|---|---|---|---|---|");
    let sizes: Vec<u64> = sg
        .keys()
        .filter(|(s, _)| s == "curve_fanout")
        .map(|(_, n)| *n)
        .collect();
    for n in sizes {
        let key = ("curve_fanout".to_string(), n);
        let (s, l) = (sg.get(&key), lg.get(&key));
        let cell = |v: Option<&Value>, k: &str, d: usize| match v {
            Some(v) if ok(v) => fmt(num(v, k), d),
            Some(v) => unfinished(v),
            None => "–".into(),
        };
        let ratio = match (
            s.and_then(|v| num(v, "us_per_send")),
            l.and_then(|v| num(v, "us_per_send")),
        ) {
            (Some(a), Some(b)) => format!("{}×", fmt(Some(b / a), 0)),
            _ => "–".into(),
        };
        println!(
            "| {} | {} | {} | {ratio} | {} | {} |",
            group(&n.to_string()),
            cell(s, "us_per_send", 2),
            cell(l, "us_per_send", 0),
            cell(s, "peak_rss_mib", 0),
            cell(l, "peak_rss_mib", 0),
        );
    }
    println!();
}

fn threads_table(sg: &Points, lg: &Points) {
    println!("#### Many threads (10-node chain per thread; supersteps per second)\n");
    println!(
        "| saver | durability | runners | stategraph (threads) | LangGraph (threads) | stategraph / LangGraph |"
    );
    println!("|---|---|---|---|---|---|");
    for (saver, base) in [
        ("SQLite", "curve_threads_sqlite"),
        ("PostgreSQL", "curve_threads_postgres"),
    ] {
        for (durability, scenario) in [
            ("async", base.to_string()),
            ("sync", format!("{base}_sync")),
        ] {
            let mut sizes: Vec<u64> = sg
                .keys()
                .chain(lg.keys())
                .filter(|(s, _)| *s == scenario)
                .map(|(_, n)| *n)
                .collect();
            sizes.sort_unstable();
            sizes.dedup();
            for n in sizes {
                let key = (scenario.clone(), n);
                let cell = |v: Option<&Value>| match v {
                    Some(v) if ok(v) => format!(
                        "{} ({})",
                        fmt(num(v, "supersteps_per_s"), 0),
                        group(&v["threads"].as_u64().unwrap_or(0).to_string())
                    ),
                    Some(v) => unfinished(v),
                    None => "–".into(),
                };
                let (s, l) = (sg.get(&key), lg.get(&key));
                let rate = |v: Option<&Value>| {
                    v.filter(|v| ok(v)).and_then(|v| num(v, "supersteps_per_s"))
                };
                let ratio = match (rate(s), rate(l)) {
                    (Some(a), Some(b)) => format!("{}×", fmt(Some(a / b), 1)),
                    _ => "–".into(),
                };
                println!(
                    "| {saver} | {durability} | {n} | {} | {} | {ratio} |",
                    cell(s),
                    cell(l)
                );
            }
        }
    }
    println!();
}

/// Both sides on two scenarios (`(scenario, label)`, the second drawn in the
/// second colours): four lines of `key`.
fn four(sg: &Points, lg: &Points, a: (&str, &str), b: (&str, &str), key: &str) -> Vec<Line> {
    vec![
        line(&format!("stategraph, {}", a.1), SG, series(sg, a.0, key)),
        line(&format!("stategraph, {}", b.1), SG2, series(sg, b.0, key)),
        line(&format!("LangGraph, {}", a.1), LG, series(lg, a.0, key)),
        line(&format!("LangGraph, {}", b.1), LG2, series(lg, b.0, key)),
    ]
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err("usage: plot_curves RESULTS_DIR CHART_DIR".into());
    }
    let (results, charts) = (Path::new(&args[1]), Path::new(&args[2]));
    let sg = load(&results.join("stategraph.jsonl"))?;
    let lg = load(&results.join("langgraph.jsonl"))?;
    std::fs::create_dir_all(charts)?;

    chart(
        &charts.join("steps_time.svg"),
        "Long thread: µs per superstep (whole run, Durability::Async)",
        "supersteps in the thread",
        "µs per superstep",
        &four(
            &sg,
            &lg,
            ("curve_steps_mem", "InMemorySaver"),
            ("curve_steps_sqlite", "SqliteSaver"),
            "us_per_superstep",
        ),
        true,
    )?;
    flatness_chart(&charts.join("steps_flatness.svg"), &sg, &lg)?;
    chart(
        &charts.join("steps_storage.svg"),
        "Long thread on SQLite: database bytes per superstep",
        "supersteps in the thread",
        "bytes per superstep",
        &[
            line(
                "stategraph, SqliteSaver",
                SG2,
                series(&sg, "curve_steps_sqlite", "db_bytes_per_step"),
            ),
            line(
                "LangGraph, SqliteSaver",
                LG2,
                series(&lg, "curve_steps_sqlite", "db_bytes_per_step"),
            ),
        ],
        false,
    )?;
    chart(
        &charts.join("steps_rss.svg"),
        "Long thread: peak RSS of the process",
        "supersteps in the thread",
        "peak RSS (MiB)",
        &four(
            &sg,
            &lg,
            ("curve_steps_mem", "InMemorySaver"),
            ("curve_steps_sqlite", "SqliteSaver"),
            "peak_rss_mib",
        ),
        true,
    )?;
    chart(
        &charts.join("fanout_time.svg"),
        "Wide fan-out: µs per Send (one superstep)",
        "Sends in the superstep",
        "µs per Send",
        &[
            line("stategraph", SG, series(&sg, "curve_fanout", "us_per_send")),
            line("LangGraph", LG, series(&lg, "curve_fanout", "us_per_send")),
        ],
        true,
    )?;
    chart(
        &charts.join("fanout_rss.svg"),
        "Wide fan-out: peak RSS of the process",
        "Sends in the superstep",
        "peak RSS (MiB)",
        &[
            line(
                "stategraph",
                SG,
                series(&sg, "curve_fanout", "peak_rss_mib"),
            ),
            line("LangGraph", LG, series(&lg, "curve_fanout", "peak_rss_mib")),
        ],
        true,
    )?;
    chart(
        &charts.join("threads.svg"),
        "Many threads: supersteps per second (Durability::Async)",
        "concurrent runners",
        "supersteps per second",
        &four(
            &sg,
            &lg,
            ("curve_threads_postgres", "PostgreSQL"),
            ("curve_threads_sqlite", "SQLite"),
            "supersteps_per_s",
        ),
        true,
    )?;

    steps_table(&sg, &lg);
    fanout_table(&sg, &lg);
    threads_table(&sg, &lg);
    Ok(())
}
