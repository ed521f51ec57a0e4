from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="sync_started_at",
            field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name="sync started at"),
        ),
    ]
