//! Runs one command: calls the function through the client, prints the reply, says how it ended.

use std::io::Write;
use std::process::ExitCode;

use aws_config::{BehaviorVersion, Region};
use clap::CommandFactory;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use sqs_waiter_client::{Client, Error, Job, JobReply, Pause, PauseReply, Preview, Replay, Reschedule, Resume, Stats};

use crate::args::{Cli, Command, OnDuplicateArg};
use crate::render;

// The commands with more to them than one call and its reply, one file each.
mod cancel_many;
mod enqueue;
mod list;
mod redrive;

/// How a command ended: 0 done, 1 refused or not done.
pub enum Ended {
    Done,
    /// The reason, one line for stderr.
    NotDone(String),
}

pub async fn run(cli: Cli) -> ExitCode {
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "sqs-waiter", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    // A schedule's preview is computed here: no AWS call, no credentials needed.
    if let Command::Preview {
        queue: None,
        cron,
        every,
        schedule,
        tz,
        from,
        n,
        ..
    } = &cli.command
    {
        let rule = crate::preview::Given {
            cron: cron.as_deref(),
            every: *every,
            schedule: schedule.as_deref(),
        };
        return match crate::preview::local(rule, tz.as_deref(), *from, *n as usize) {
            Ok(reply) if cli.json => {
                print_json(&reply);
                ExitCode::SUCCESS
            }
            Ok(reply) => {
                print_text(&crate::preview::render(&reply));
                ExitCode::SUCCESS
            }
            Err(why) => fail(&why),
        };
    }
    let client = client(&cli).await;
    if let Command::Console {
        port,
        read_only,
        no_open,
    } = cli.command
    {
        let options = sqs_waiter_console::Options {
            port,
            read_only,
            region: region_of(&cli),
        };
        let open = |url: &str| {
            if !no_open {
                crate::browser::open(url);
            }
        };
        return match sqs_waiter_console::serve(client, options, open).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("--port: cannot serve on 127.0.0.1:{port}: {e}")),
        };
    }
    match execute(&cli, &client).await {
        Ok(Ended::Done) => ExitCode::SUCCESS,
        Ok(Ended::NotDone(why)) => fail(&why),
        Err(e) => fail(&describe(&e, &cli)),
    }
}

fn fail(why: &str) -> ExitCode {
    // One line, whatever the error's text holds.
    let line = why.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("sqs-waiter: {line}");
    ExitCode::from(1)
}

async fn client(cli: &Cli) -> Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(https_client());
    if let Some(region) = &cli.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let Some(url) = &cli.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    let config = loader.load().await;
    Client::new(aws_sdk_lambda::Client::new(&config), cli.function.clone())
}

/// The region the CLI calls, for the console's link to CloudWatch.
fn region_of(cli: &Cli) -> Option<String> {
    cli.region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
}

/// HTTPS for the SDK: hyper with rustls on ring, trusting the system's roots (the SDK's
/// default client, rustls on aws-lc, is not compiled in: see the workspace Cargo.toml).
fn https_client() -> aws_sdk_lambda::config::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https()
}

/// The error as one line that names what to fix.
fn describe(e: &Error, cli: &Cli) -> String {
    match e {
        Error::InvalidRequest { field, message } => format!("{field}: {message}"),
        e if e.is_function_missing() => format!(
            "--function: no Lambda function named {:?}{}",
            cli.function,
            cli.endpoint_url
                .as_deref()
                .map_or_else(String::new, |u| format!(" at {u}"))
        ),
        Error::Invoke { .. } => format!("--function: {e}"),
        e => e.to_string(),
    }
}

fn print_json<T: Serialize>(value: &T) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = serde_json::to_writer_pretty(&mut out, value).map(|()| writeln!(out));
}

fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Prints a job reply; a reply that means "not done" ends with 1.
fn job_reply(cli: &Cli, reply: &JobReply, text: impl FnOnce(&JobReply) -> String) -> Ended {
    if cli.json {
        print_json(reply);
    } else if render::not_done(reply).is_none() {
        print_text(&text(reply));
    }
    match render::not_done(reply) {
        Some(why) => Ended::NotDone(why),
        None => Ended::Done,
    }
}

/// Prints a `pause` or `resume` reply; `not_found` and `dispatching` end with 1.
fn pause_reply(cli: &Cli, reply: &PauseReply) -> Ended {
    let why = render::pause_not_done(reply);
    if cli.json {
        print_json(reply);
    } else if why.is_none() {
        print_text(&render::pause(reply));
    }
    match why {
        Some(why) => Ended::NotDone(why),
        None => Ended::Done,
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .or_else(|| console::Term::stdout().size_checked().map(|(_, w)| usize::from(w)))
        .unwrap_or(80)
}

fn progress(len: Option<u64>, what: &'static str) -> ProgressBar {
    let bar = match len {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template("{spinner} {msg} {bar:40} {pos}/{len} ({per_sec}, {eta})")
                .expect("a valid template"),
        ),
        None => ProgressBar::new_spinner()
            .with_style(ProgressStyle::with_template("{spinner} {msg} {pos} ({per_sec})").expect("a valid template")),
    };
    bar.set_message(what);
    bar
}

async fn execute(cli: &Cli, client: &Client) -> Result<Ended, Error> {
    match &cli.command {
        Command::Enqueue {
            queue,
            body,
            when: w,
            id,
            attributes,
            group,
            expires_at,
            rank,
            trace_header,
            repetition,
            on_duplicate,
            tags,
        } => {
            let mut job = Job::new(queue, body);
            job.on_duplicate = on_duplicate.map(OnDuplicateArg::into_contract);
            (job.repeat, job.time_zone, job.schedule) = enqueue::repeat_of(repetition);
            job.trace_header = trace_header.clone();
            (job.priority, job.weight) = (rank.priority, rank.weight);
            (job.delay_seconds, job.perform_at) = (w.delay, w.at);
            job.job_id = id.clone();
            job.message_group_id = group.clone();
            job.expires_at = *expires_at;
            job.message_attributes = attributes.iter().cloned().collect();
            job.tags = tags.iter().cloned().collect();
            let reply = client.enqueue(&job).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Get { queue, id } => {
            let reply = client.get(queue, id).await?;
            Ok(job_reply(cli, &reply, render::details))
        }
        Command::Cancel { queue, id } => {
            let reply = client.cancel(queue, id).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Reschedule {
            queue,
            id,
            change: c,
            if_version,
            rank,
        } => {
            let request = Reschedule {
                delay_seconds: c.delay,
                perform_at: c.at,
                schedule: c.schedule.clone(),
                time_zone: c.tz.clone(),
                message_body: c.body.clone(),
                message_attributes: (!c.attributes.is_empty()).then(|| c.attributes.iter().cloned().collect()),
                if_version: *if_version,
                priority: rank.priority,
                weight: rank.weight,
                ..Reschedule::after(queue, id, std::time::Duration::ZERO)
            };
            let reply = client.reschedule(&request).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Replay {
            queue,
            id,
            at,
            delay,
            new_id,
        } => {
            let request = Replay {
                new_job_id: new_id.clone(),
                delay_seconds: *delay,
                perform_at: *at,
                ..Replay::now(queue, id)
            };
            let reply = client.replay(&request).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Stats {
            queue,
            buckets,
            bucket_s,
            formats,
        } => {
            let reply = client
                .stats(&Stats {
                    queue: queue.clone(),
                    buckets: Some(*buckets),
                    bucket_s: Some(*bucket_s),
                    formats: formats.then_some(true),
                })
                .await?;
            if cli.json {
                print_json(&reply);
            } else {
                print_text(&render::stats(&reply, terminal_width()));
            }
            Ok(Ended::Done)
        }
        Command::Pause { queue, id } => {
            let request = match id {
                Some(id) => Pause::job(queue, id),
                None => Pause::queue(queue),
            };
            Ok(pause_reply(cli, &client.pause(&request).await?))
        }
        Command::Resume { queue, id } => {
            let request = match id {
                Some(id) => Resume::job(queue, id),
                None => Resume::queue(queue),
            };
            Ok(pause_reply(cli, &client.resume(&request).await?))
        }
        Command::List {
            queue,
            selection,
            limit,
        } => list::list(cli, client, queue, selection, *limit).await,
        Command::Trigger { queue, id } => {
            let reply = client.trigger(queue, id).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Queues => {
            let reply = client.queues().await?;
            if cli.json {
                print_json(&reply);
            } else {
                print_text(&render::queues(&reply));
            }
            Ok(Ended::Done)
        }
        Command::Parked { queue, limit } => list::parked(cli, client, queue, *limit).await,
        Command::Redrive { queue, ids, all } if *all => redrive::all(cli, client, queue).await,
        Command::Redrive { queue, ids, .. } if ids.len() == 1 => {
            let reply = client.redrive(queue, &ids[0]).await?;
            Ok(job_reply(cli, &reply, render::outcome))
        }
        Command::Redrive { queue, ids, .. } => redrive::many(cli, client, queue, ids).await,
        Command::CancelMany { queue, ids, selection } => cancel_many::run(cli, client, queue, ids, selection).await,
        Command::Preview { queue, id, n, .. } => {
            let request = Preview {
                queue: queue.clone(),
                job_id: id.clone(),
                count: Some(*n),
                ..Preview::default()
            };
            let reply = client.preview(&request).await?;
            if reply.status == Some(sqs_waiter_client::JobStatus::NotFound) {
                return Ok(Ended::NotDone(format!(
                    "job_id: no job {} on queue {}",
                    id.as_deref().unwrap_or_default(),
                    queue.as_deref().unwrap_or_default()
                )));
            }
            if cli.json {
                print_json(&reply);
            } else {
                print_text(&crate::preview::render(&reply));
            }
            Ok(Ended::Done)
        }
        // Handled in `run` before a client call.
        Command::Completions { .. } | Command::Console { .. } => Ok(Ended::Done),
    }
}
